//! Where durable chains live ([`chainbox::store`]): the SQL store, on
//! SQLite and on a real PostgreSQL, behaves as the in-memory store does.
//! One suite of behaviours runs against each: `memory::`, `sqlite::` (a
//! file in a temporary directory) and `postgres::` (a throwaway server the
//! test starts with `initdb` and `pg_ctl`, found through `CHAINBOX_PG_BIN`,
//! `PATH` or Debian's `/usr/lib/postgresql/*/bin`; without one the test
//! fails under CI and is skipped, loudly, elsewhere).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use chainbox::journal::JournalEntry;
use chainbox::result::PendingCall;
use chainbox::store::{
    self, ChainStore, Claim, Decision, Lock, MemoryStore, PendingChain, SqlStore, StoreError, StoredChain,
};
use chainbox::{ApprovalDecision, CallStatus, Owner, ToolRisk};
use chainbox_protocol::CallOutcome;
use serde_json::{Value, json};

/// A lease no test outlives.
const LEASE: Duration = Duration::from_secs(600);

/// Where a behaviour's stores come from: every `open` is another handle on
/// the same chains (for the SQL stores, another connection pool, as a
/// second process would have).
enum Backend {
    Memory(Arc<MemoryStore>),
    Url(String),
}

impl Backend {
    fn memory() -> Self {
        Self::Memory(Arc::new(MemoryStore::new()))
    }

    async fn open(&self) -> Arc<dyn ChainStore> {
        match self {
            Self::Memory(store) => store.clone(),
            Self::Url(url) => store::connect(url)
                .await
                .unwrap_or_else(|e| panic!("connect {url}: {e}")),
        }
    }
}

fn chain(chain_id: &str) -> StoredChain {
    StoredChain {
        chain_id: chain_id.to_owned(),
        script: "x = await bump(n=1)\nx".to_owned(),
        // A number no f64 or i64 holds: the policy comes back exact.
        policy: serde_json::from_str(r#"{"python":"auto","max_tool_calls":123456789012345678901234567890}"#)
            .expect("policy JSON"),
        seed: u64::MAX,
        created_at: "2026-12-06T10:00:00Z".to_owned(),
        owner: None,
    }
}

/// [`chain`], owned by `subject` of the test's identity provider.
fn owned_chain(chain_id: &str, subject: &str) -> StoredChain {
    StoredChain {
        owner: Some(owner(subject)),
        ..chain(chain_id)
    }
}

fn owner(subject: &str) -> Owner {
    Owner {
        issuer: "https://id.example".to_owned(),
        subject: subject.to_owned(),
    }
}

/// A pending chain as `pending()` lists it.
fn listed(chain_id: &str, owner: Option<Owner>, call: PendingCall) -> PendingChain {
    PendingChain {
        chain_id: chain_id.to_owned(),
        owner,
        call,
    }
}

fn entry(seq: u32) -> JournalEntry {
    JournalEntry {
        seq,
        tool: "bump".to_owned(),
        args_digest: format!("{seq:064x}"),
        status: CallStatus::Ok,
        outcome: CallOutcome::Ok {
            value: json!({"n": seq, "big": 18446744073709551615u64}),
        },
        artifact_ref: None,
        files: Vec::new(),
        source: Some("local:bump".to_owned()),
        policy: None,
        observed_at: format!("2026-12-06T10:00:0{seq}Z"),
        provenance: Vec::new(),
    }
}

fn pending(seq: u32, requested_at: &str) -> PendingCall {
    let mut arguments = serde_json::Map::new();
    arguments.insert("path".to_owned(), json!("/etc/hosts"));
    PendingCall {
        seq,
        tool: "rm".to_owned(),
        arguments,
        risk: ToolRisk::Critical,
        requested_at: requested_at.to_owned(),
        provenance: Vec::new(),
    }
}

fn decision(seq: u32, decision: ApprovalDecision) -> Decision {
    Decision {
        seq,
        decision,
        decided_by: "alice".to_owned(),
        decided_at: "2026-12-06T11:00:00Z".to_owned(),
    }
}

// ---- The behaviours ----

async fn a_created_chain_reads_back_whole_and_its_id_cannot_be_taken_again(backend: &Backend) {
    let store = backend.open().await;
    let c = chain("c1");
    store.create(&c).await.expect("create");
    assert_eq!(store.chain("c1").await.expect("chain"), Some(c.clone()));
    assert_eq!(store.chain("nope").await.expect("chain"), None);
    let again = store.create(&c).await;
    assert!(
        matches!(again, Err(StoreError::Exists(ref what)) if what.contains("c1")),
        "{again:?}"
    );
}

async fn the_journal_keeps_its_entries_in_seq_order_and_refuses_a_seq_twice(backend: &Backend) {
    let store = backend.open().await;
    store.create(&chain("c1")).await.expect("create");
    assert_eq!(store.journal("c1").await.expect("journal"), []);
    store.append("c1", &entry(2)).await.expect("append 2");
    store.append("c1", &entry(1)).await.expect("append 1");
    store.append("c1", &entry(3)).await.expect("append 3");
    assert_eq!(
        store.journal("c1").await.expect("journal"),
        [entry(1), entry(2), entry(3)]
    );

    let mut other = entry(2);
    other.tool = "other".to_owned();
    let twice = store.append("c1", &other).await;
    assert!(
        matches!(twice, Err(StoreError::Exists(ref what)) if what.contains("#2")),
        "{twice:?}"
    );
    assert_eq!(
        store.journal("c1").await.expect("journal")[1],
        entry(2),
        "the first entry #2 stays"
    );
}

async fn entries_appended_together_are_all_journaled_or_none(backend: &Backend) {
    let store = backend.open().await;
    store.create(&chain("c1")).await.expect("create");
    store
        .append_many("c1", &[entry(1), entry(2), entry(3)])
        .await
        .expect("append 1-3");
    assert_eq!(
        store.journal("c1").await.expect("journal"),
        [entry(1), entry(2), entry(3)]
    );
    // #3 is taken: none of #4, #3, #5 goes in.
    let taken = store.append_many("c1", &[entry(4), entry(3), entry(5)]).await;
    assert!(
        matches!(taken, Err(StoreError::Exists(ref what)) if what.contains("#3")),
        "{taken:?}"
    );
    assert_eq!(store.journal("c1").await.expect("journal").len(), 3);
    let missing = store.append_many("nope", &[entry(1), entry(2)]).await;
    assert!(matches!(missing, Err(StoreError::NoChain(_))), "{missing:?}");
}

async fn a_missing_chain_is_no_chain_for_every_method_but_chain(backend: &Backend) {
    let store = backend.open().await;
    let no_chain = |r: Result<(), StoreError>| matches!(r, Err(StoreError::NoChain(ref id)) if id == "ghost");
    assert!(no_chain(store.append("ghost", &entry(1)).await));
    assert!(no_chain(store.journal("ghost").await.map(drop)));
    assert!(no_chain(store.suspend("ghost", &pending(1, "t")).await));
    assert!(no_chain(store.pending_of("ghost").await.map(drop)));
    assert!(no_chain(
        store.decide("ghost", &decision(1, ApprovalDecision::Approved)).await
    ));
    assert!(no_chain(store.decisions("ghost").await.map(drop)));
    assert!(no_chain(store.claim("ghost", "a", LEASE).await.map(drop)));
    assert!(no_chain(store.release("ghost", "a").await));
    assert!(no_chain(store.finish("ghost", &json!(1)).await));
}

async fn pending_lists_the_suspended_chains_oldest_first(backend: &Backend) {
    let store = backend.open().await;
    for id in ["c1", "c2", "c3"] {
        store.create(&chain(id)).await.expect("create");
    }
    assert_eq!(store.pending().await.expect("pending"), []);
    store
        .suspend("c1", &pending(1, "2026-12-06T10:00:03Z"))
        .await
        .expect("suspend");
    store
        .suspend("c2", &pending(4, "2026-12-06T10:00:01Z"))
        .await
        .expect("suspend");
    // A later suspension replaces the chain's pending call.
    store
        .suspend("c1", &pending(2, "2026-12-06T10:00:02Z"))
        .await
        .expect("suspend");
    assert_eq!(
        store.pending().await.expect("pending"),
        [
            listed("c2", None, pending(4, "2026-12-06T10:00:01Z")),
            listed("c1", None, pending(2, "2026-12-06T10:00:02Z")),
        ]
    );
    assert_eq!(
        store.pending_of("c1").await.expect("pending_of"),
        Some(pending(2, "2026-12-06T10:00:02Z")),
        "one chain's pending call"
    );
    assert_eq!(store.pending_of("c3").await.expect("pending_of"), None);
}

async fn a_chains_owner_reads_back_with_it_and_in_the_pending_list(backend: &Backend) {
    let store = backend.open().await;
    let alices = owned_chain("c1", "alice");
    store.create(&alices).await.expect("create");
    store.create(&chain("c2")).await.expect("create");
    assert_eq!(store.chain("c1").await.expect("chain"), Some(alices));
    assert_eq!(
        store.chain("c2").await.expect("chain").and_then(|c| c.owner),
        None,
        "the local user's chain has no owner"
    );
    store
        .suspend("c1", &pending(1, "2026-12-06T10:00:01Z"))
        .await
        .expect("suspend");
    store
        .suspend("c2", &pending(3, "2026-12-06T10:00:02Z"))
        .await
        .expect("suspend");
    assert_eq!(
        store.pending().await.expect("pending"),
        [
            listed("c1", Some(owner("alice")), pending(1, "2026-12-06T10:00:01Z")),
            listed("c2", None, pending(3, "2026-12-06T10:00:02Z")),
        ]
    );
}

async fn a_decision_on_the_pending_call_is_recorded_and_ends_the_wait(backend: &Backend) {
    let store = backend.open().await;
    store.create(&chain("c1")).await.expect("create");
    store
        .suspend("c1", &pending(2, "2026-12-06T10:00:00Z"))
        .await
        .expect("suspend");
    let approve = decision(2, ApprovalDecision::Approved);
    store.decide("c1", &approve).await.expect("decide");
    assert_eq!(store.pending().await.expect("pending"), []);
    assert_eq!(
        store.decisions("c1").await.expect("decisions"),
        std::slice::from_ref(&approve)
    );

    // The next suspension, decided with other arguments: kept in order.
    store
        .suspend("c1", &pending(5, "2026-12-06T10:00:05Z"))
        .await
        .expect("suspend");
    let mut arguments = serde_json::Map::new();
    arguments.insert("path".to_owned(), json!("/tmp/x"));
    let modify = decision(5, ApprovalDecision::Modified { arguments });
    store.decide("c1", &modify).await.expect("decide");
    assert_eq!(store.decisions("c1").await.expect("decisions"), [approve, modify]);
}

async fn a_decision_on_another_call_or_on_no_pending_call_is_not_pending(backend: &Backend) {
    let store = backend.open().await;
    store.create(&chain("c1")).await.expect("create");
    let deny = |seq| {
        decision(
            seq,
            ApprovalDecision::Denied {
                reason: Some("no".to_owned()),
            },
        )
    };
    let none = store.decide("c1", &deny(1)).await;
    assert!(
        matches!(none, Err(StoreError::NotPending { ref chain_id, seq: Some(1) }) if chain_id == "c1"),
        "{none:?}"
    );
    store
        .suspend("c1", &pending(3, "2026-12-06T10:00:00Z"))
        .await
        .expect("suspend");
    let wrong = store.decide("c1", &deny(2)).await;
    assert!(
        matches!(wrong, Err(StoreError::NotPending { seq: Some(2), .. })),
        "{wrong:?}"
    );
    assert_eq!(store.pending().await.expect("pending").len(), 1, "still waiting on #3");
    store.decide("c1", &deny(3)).await.expect("decide #3");
    let twice = store.decide("c1", &deny(3)).await;
    assert!(
        matches!(twice, Err(StoreError::NotPending { seq: Some(3), .. })),
        "{twice:?}"
    );
    assert_eq!(store.decisions("c1").await.expect("decisions"), [deny(3)]);
}

async fn a_claim_is_held_by_one_claimant_until_released(backend: &Backend) {
    let store = backend.open().await;
    store.create(&chain("c1")).await.expect("create");
    assert_eq!(store.claim("c1", "a", LEASE).await.expect("claim"), Claim::Won);
    assert_eq!(
        store.claim("c1", "a", LEASE).await.expect("claim"),
        Claim::Won,
        "the holder again"
    );
    assert_eq!(
        store.claim("c1", "b", LEASE).await.expect("claim"),
        Claim::HeldBy("a".to_owned())
    );
    store.release("c1", "b").await.expect("release by another");
    assert_eq!(
        store.claim("c1", "b", LEASE).await.expect("claim"),
        Claim::HeldBy("a".to_owned())
    );
    store.release("c1", "a").await.expect("release");
    assert_eq!(store.claim("c1", "b", LEASE).await.expect("claim"), Claim::Won);
}

async fn a_chain_created_claimed_is_held_by_its_claimant_and_reads_back_whole(backend: &Backend) {
    let store = backend.open().await;
    let made = chain("c1");
    store.create_claimed(&made, "a", LEASE).await.expect("create claimed");
    assert_eq!(store.chain("c1").await.expect("chain"), Some(made.clone()));
    assert_eq!(
        store.claim("c1", "b", LEASE).await.expect("claim"),
        Claim::HeldBy("a".to_owned())
    );
    assert_eq!(
        store.claim("c1", "a", LEASE).await.expect("claim"),
        Claim::Won,
        "the holder again"
    );
    assert!(
        matches!(
            store.create_claimed(&made, "b", LEASE).await,
            Err(StoreError::Exists(_))
        ),
        "its id cannot be taken again"
    );
}

async fn a_claim_past_its_lease_goes_to_the_next_claimant(backend: &Backend) {
    let store = backend.open().await;
    store.create(&chain("c1")).await.expect("create");
    // `a` claimed for no time at all and never released: it died mid-run.
    assert_eq!(store.claim("c1", "a", Duration::ZERO).await.expect("claim"), Claim::Won);
    tokio::time::sleep(Duration::from_millis(5)).await;
    assert_eq!(store.claim("c1", "b", LEASE).await.expect("claim"), Claim::Won);
    assert_eq!(
        store.claim("c1", "a", LEASE).await.expect("claim"),
        Claim::HeldBy("b".to_owned()),
        "the stale holder lost the chain"
    );
}

async fn a_finished_chain_answers_every_claim_with_its_result(backend: &Backend) {
    let store = backend.open().await;
    store.create(&chain("c1")).await.expect("create");
    store.create(&chain("c2")).await.expect("create");
    store
        .suspend("c1", &pending(1, "2026-12-06T10:00:00Z"))
        .await
        .expect("suspend");
    assert_eq!(store.claim("c1", "a", LEASE).await.expect("claim"), Claim::Won);
    let result = json!({"status": "ok", "output": [10, 20], "n": 123456789012345678901234567890u128});
    store.finish("c1", &result).await.expect("finish");
    assert_eq!(
        store.claim("c1", "a", LEASE).await.expect("claim"),
        Claim::Finished(result.clone())
    );
    assert_eq!(
        store.claim("c1", "b", LEASE).await.expect("claim"),
        Claim::Finished(result)
    );
    assert_eq!(
        store.pending().await.expect("pending"),
        [],
        "finishing clears the pending call"
    );
    // A result of JSON null is a result, not "not finished".
    store.finish("c2", &Value::Null).await.expect("finish");
    assert_eq!(
        store.claim("c2", "a", LEASE).await.expect("claim"),
        Claim::Finished(Value::Null)
    );
}

async fn of_many_claimants_at_once_on_two_handles_exactly_one_wins(backend: &Backend) {
    const CLAIMANTS: usize = 16;
    let stores = [backend.open().await, backend.open().await];
    stores[0].create(&chain("c1")).await.expect("create");
    let tasks: Vec<_> = (0..CLAIMANTS)
        .map(|i| {
            let store = stores[i % 2].clone();
            tokio::spawn(async move { (i, store.claim("c1", &format!("node-{i}"), LEASE).await) })
        })
        .collect();
    let mut winners = Vec::new();
    let mut holders = Vec::new();
    for task in tasks {
        let (i, claim) = task.await.expect("task");
        match claim.expect("claim") {
            Claim::Won => winners.push(format!("node-{i}")),
            Claim::HeldBy(holder) => holders.push(holder),
            Claim::Finished(r) => panic!("not finished: {r}"),
        }
    }
    assert_eq!(winners.len(), 1, "winners: {winners:?}");
    assert!(holders.iter().all(|h| *h == winners[0]), "{holders:?} vs {winners:?}");
}

async fn the_state_key_is_made_once_and_every_handle_at_once_gets_the_same(backend: &Backend) {
    const HANDLES: usize = 8;
    let mut stores = Vec::new();
    for _ in 0..HANDLES {
        stores.push(backend.open().await);
    }
    let tasks: Vec<_> = stores
        .iter()
        .map(|store| {
            let store = store.clone();
            tokio::spawn(async move { store.state_key().await })
        })
        .collect();
    let mut keys = Vec::new();
    for task in tasks {
        keys.push(task.await.expect("task").expect("state_key"));
    }
    assert!(keys.iter().all(|k| *k == keys[0]), "different keys: {keys:?}");
    assert_ne!(keys[0], [0; 32], "a random key");
    let again = backend.open().await.state_key().await.expect("state_key");
    assert_eq!(again, keys[0], "the key is kept");
}

/// The chains a sweep judges are the unfinished ones no run holds: never
/// claimed, released, or claimed with a lease that ran out before the line
/// it draws; with what it waits on and whether it was decided.
async fn idle_chains_are_the_unfinished_ones_no_run_holds(backend: &Backend) {
    let store = backend.open().await;
    for id in ["unclaimed", "held", "stale", "decided", "done"] {
        store.create(&chain(id)).await.expect("create");
    }
    store.claim("held", "a", LEASE).await.expect("claim");
    store.claim("stale", "b", Duration::ZERO).await.expect("claim");
    store
        .suspend("decided", &pending(1, "2026-12-06T10:00:00Z"))
        .await
        .expect("suspend");
    store
        .decide("decided", &decision(1, ApprovalDecision::Approved))
        .await
        .expect("decide");
    store.finish("done", &json!({"status": "ok"})).await.expect("finish");
    tokio::time::sleep(Duration::from_millis(5)).await;
    let mut idle = store
        .idle_chains(store::epoch_ms_before(Duration::ZERO))
        .await
        .expect("idle chains");
    idle.sort_by(|a, b| a.chain_id.cmp(&b.chain_id));
    let ids: Vec<&str> = idle.iter().map(|c| c.chain_id.as_str()).collect();
    assert_eq!(ids, ["decided", "stale", "unclaimed"]);
    assert_eq!(idle[0].last_decided_at.as_deref(), Some("2026-12-06T11:00:00Z"));
    assert_eq!(
        (idle[0].pending.clone(), idle[0].session, idle[0].open_task),
        (None, false, false)
    );
    assert_eq!(idle[1].policy, chain("stale").policy);
    let before_the_lease_ran_out = store
        .idle_chains(store::epoch_ms_before(Duration::from_secs(60)))
        .await
        .expect("idle chains");
    assert!(
        before_the_lease_ran_out.iter().all(|c| c.chain_id != "stale"),
        "a claim is dead only once the line is past its lease"
    );
}

/// A sweep's finish is one conditional write: it finishes the chain only
/// as the sweep found it. A decision or a claim that came since wins.
async fn an_idle_chain_is_finished_only_as_the_sweep_found_it(backend: &Backend) {
    let store = backend.open().await;
    let now = || store::epoch_ms_before(Duration::ZERO);
    let swept = json!({"status": "error", "error": {"kind": "expired"}});
    store.create(&chain("c1")).await.expect("create");
    store
        .suspend("c1", &pending(1, "2026-12-06T10:00:00Z"))
        .await
        .expect("suspend");
    assert!(
        !store.finish_idle("c1", &swept, Some(2), now()).await.expect("finish"),
        "it waits on another call"
    );
    store
        .decide("c1", &decision(1, ApprovalDecision::Approved))
        .await
        .expect("decide");
    assert!(
        !store.finish_idle("c1", &swept, Some(1), now()).await.expect("finish"),
        "decided meanwhile"
    );
    store.claim("c1", "runner", LEASE).await.expect("claim");
    assert!(
        !store.finish_idle("c1", &swept, None, now()).await.expect("finish"),
        "a run holds it"
    );
    store.release("c1", "runner").await.expect("release");
    assert!(store.finish_idle("c1", &swept, None, now()).await.expect("finish"));
    assert_eq!(
        store.claim("c1", "late", LEASE).await.expect("claim"),
        Claim::Finished(swept.clone())
    );
    assert!(
        !store.finish_idle("c1", &json!({}), None, now()).await.expect("finish"),
        "finished once"
    );
}

/// Only a finished chain is deleted, and with all that is its; the
/// counts say what is left.
async fn only_a_finished_chain_is_deleted_and_with_all_that_is_its(backend: &Backend) {
    let store = backend.open().await;
    store.create(&chain("c1")).await.expect("create");
    store.append("c1", &entry(1)).await.expect("append");
    store
        .suspend("c1", &pending(2, "2026-12-06T10:00:00Z"))
        .await
        .expect("suspend");
    store
        .decide("c1", &decision(2, ApprovalDecision::Approved))
        .await
        .expect("decide");
    let counts = store.counts().await.expect("counts");
    assert_eq!(
        (counts.chains, counts.finished, counts.journal, counts.decisions),
        (1, 0, 1, 1)
    );
    assert!(!store.delete_finished("c1").await.expect("delete"), "not finished");
    assert!(store.finished_chains().await.expect("finished").is_empty());
    store.finish("c1", &json!({"status": "ok"})).await.expect("finish");
    let finished = store.finished_chains().await.expect("finished");
    assert_eq!(finished.len(), 1);
    assert!(finished[0].finished_at_ms > store::epoch_ms_before(Duration::from_secs(60)));
    assert!(store.delete_finished("c1").await.expect("delete"));
    assert!(!store.delete_finished("c1").await.expect("delete"), "gone already");
    assert_eq!(store.chain("c1").await.expect("read"), None);
    assert!(matches!(store.journal("c1").await, Err(StoreError::NoChain(_))));
    assert_eq!(
        store.counts().await.expect("counts"),
        chainbox::store::StoreCounts::default()
    );
}

/// A named lock has one holder at a time, on every handle, until it
/// releases it or its lease runs out.
async fn a_lock_is_held_by_one_holder_until_released_or_its_lease_runs_out(backend: &Backend) {
    let (one, two) = (backend.open().await, backend.open().await);
    assert_eq!(one.take_lock("sweep", "a", LEASE).await.expect("lock"), Lock::Taken);
    assert_eq!(
        one.take_lock("sweep", "a", LEASE).await.expect("lock"),
        Lock::Taken,
        "renewed"
    );
    assert_eq!(
        two.take_lock("sweep", "b", LEASE).await.expect("lock"),
        Lock::HeldBy("a".to_owned())
    );
    assert_eq!(two.take_lock("other", "b", LEASE).await.expect("lock"), Lock::Taken);
    two.release_lock("sweep", "b").await.expect("release by another");
    assert_eq!(
        two.take_lock("sweep", "b", LEASE).await.expect("lock"),
        Lock::HeldBy("a".to_owned())
    );
    one.release_lock("sweep", "a").await.expect("release");
    assert_eq!(
        two.take_lock("sweep", "b", Duration::ZERO).await.expect("lock"),
        Lock::Taken
    );
    tokio::time::sleep(Duration::from_millis(5)).await;
    assert_eq!(
        one.take_lock("sweep", "a", LEASE).await.expect("lock"),
        Lock::Taken,
        "b's lease ran out"
    );
}

/// Each behaviour above, once per backend: `memory::NAME`, `sqlite::NAME`,
/// and all of them in `postgres::` on one server (a fresh database each).
macro_rules! suite {
    ($($name:ident),* $(,)?) => {
        mod memory {
            $(
                #[tokio::test(flavor = "multi_thread")]
                async fn $name() {
                    super::$name(&super::Backend::memory()).await;
                }
            )*
        }

        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread")]
                async fn $name() {
                    let dir = tempfile::tempdir().expect("tempdir");
                    super::$name(&super::sqlite_backend(dir.path())).await;
                }
            )*
        }

        mod postgres {
            #[tokio::test(flavor = "multi_thread")]
            async fn behaves_as_the_memory_store() {
                let Some(server) = super::PgServer::start() else { return };
                let mut databases = 0;
                $(
                    databases += 1;
                    let backend = server.database(&format!("behaviour_{databases}")).await;
                    eprintln!("postgres: {}", stringify!($name));
                    super::$name(&backend).await;
                )*
            }
        }
    };
}

suite!(
    a_created_chain_reads_back_whole_and_its_id_cannot_be_taken_again,
    a_chain_created_claimed_is_held_by_its_claimant_and_reads_back_whole,
    the_journal_keeps_its_entries_in_seq_order_and_refuses_a_seq_twice,
    entries_appended_together_are_all_journaled_or_none,
    a_missing_chain_is_no_chain_for_every_method_but_chain,
    pending_lists_the_suspended_chains_oldest_first,
    a_chains_owner_reads_back_with_it_and_in_the_pending_list,
    a_decision_on_the_pending_call_is_recorded_and_ends_the_wait,
    a_decision_on_another_call_or_on_no_pending_call_is_not_pending,
    a_claim_is_held_by_one_claimant_until_released,
    a_claim_past_its_lease_goes_to_the_next_claimant,
    a_finished_chain_answers_every_claim_with_its_result,
    of_many_claimants_at_once_on_two_handles_exactly_one_wins,
    the_state_key_is_made_once_and_every_handle_at_once_gets_the_same,
    idle_chains_are_the_unfinished_ones_no_run_holds,
    an_idle_chain_is_finished_only_as_the_sweep_found_it,
    only_a_finished_chain_is_deleted_and_with_all_that_is_its,
    a_lock_is_held_by_one_holder_until_released_or_its_lease_runs_out,
);

fn sqlite_backend(dir: &Path) -> Backend {
    Backend::Url(format!("sqlite:{}", dir.join("state.db").display()))
}

// ---- SQL only ----

#[tokio::test(flavor = "multi_thread")]
async fn a_sqlite_store_is_created_in_wal_mode_and_its_chains_outlive_the_connection() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("sub-state.db");
    let url = format!("sqlite:{}", path.display());
    {
        let store = SqlStore::connect(&url).await.expect("connect");
        store.create(&chain("c1")).await.expect("create");
        store.append("c1", &entry(1)).await.expect("append");
        store.close().await;
    }
    assert!(path.is_file(), "the file is created");
    let mode: String = {
        let pool = sqlx::SqlitePool::connect(&url).await.expect("raw connect");
        let mode = sqlx::query_scalar("PRAGMA journal_mode")
            .fetch_one(&pool)
            .await
            .expect("pragma");
        pool.close().await;
        mode
    };
    assert_eq!(mode, "wal");
    let store = SqlStore::connect(&url).await.expect("reconnect");
    assert_eq!(store.chain("c1").await.expect("chain"), Some(chain("c1")));
    assert_eq!(store.journal("c1").await.expect("journal"), [entry(1)]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_row_that_is_not_json_is_a_backend_error_naming_its_table_and_chain() {
    let dir = tempfile::tempdir().expect("tempdir");
    let url = format!("sqlite:{}", dir.path().join("state.db").display());
    let store = SqlStore::connect(&url).await.expect("connect");
    store.create(&chain("c1")).await.expect("create");
    store.append("c1", &entry(1)).await.expect("append");
    let pool = sqlx::SqlitePool::connect(&url).await.expect("raw connect");
    for sql in [
        "UPDATE chainbox_chains SET policy = '{not json' WHERE chain_id = 'c1'",
        "UPDATE chainbox_journal SET entry = '[]' WHERE chain_id = 'c1'",
        "UPDATE chainbox_chains SET finished = 'nul' WHERE chain_id = 'c1'",
    ] {
        sqlx::query(sql).execute(&pool).await.expect(sql);
    }
    let policy = store.chain("c1").await;
    assert!(
        matches!(policy, Err(StoreError::Backend(ref m)) if m.contains("chains row of chain \"c1\"") && m.contains("policy")),
        "{policy:?}"
    );
    let journal = store.journal("c1").await;
    assert!(
        matches!(journal, Err(StoreError::Backend(ref m)) if m.contains("journal row of chain \"c1\"") && m.contains("entry")),
        "{journal:?}"
    );
    let claim = store.claim("c1", "a", LEASE).await;
    assert!(
        matches!(claim, Err(StoreError::Backend(ref m)) if m.contains("chains row of chain \"c1\"") && m.contains("finished")),
        "{claim:?}"
    );
}

/// The `chains` table as chainbox made it before chains had owners.
const CHAINS_BEFORE_OWNERS: &str = "CREATE TABLE chains (
    chain_id TEXT PRIMARY KEY,
    script TEXT NOT NULL,
    policy TEXT NOT NULL,
    seed TEXT NOT NULL,
    created_at TEXT NOT NULL,
    claimed_by TEXT,
    claimed_until BIGINT,
    finished TEXT,
    pending TEXT,
    pending_seq BIGINT
)";

/// A chain of that time, suspended at a call.
const OLD_CHAIN: &str = "INSERT INTO chains (chain_id, script, policy, seed, created_at, pending, pending_seq) \
     VALUES ('old', 'x = await bump(n=1)', '{}', '7', '2026-12-01T10:00:00Z', \
     '{\"seq\":1,\"tool\":\"rm\",\"arguments\":{},\"risk\":\"critical\",\"requested_at\":\"2026-12-01T10:00:00Z\"}', 1)";

/// A store on a database made before chains had owners: the connect adds
/// the owner columns, the old chain reads back unowned (as a chain and in
/// the pending list), a new chain keeps its owner, and connecting again
/// changes nothing.
async fn the_columns_are_added_to_a_database_made_before_owners(url: &str) {
    let store = SqlStore::connect(url).await.expect("connect to the old database");
    let old = store.chain("old").await.expect("chain").expect("the old chain");
    assert_eq!((old.seed, old.owner), (7, None));
    let waiting = store.pending().await.expect("pending");
    assert_eq!(
        waiting
            .iter()
            .map(|c| (c.chain_id.as_str(), c.owner.clone()))
            .collect::<Vec<_>>(),
        [("old", None)]
    );
    store.create(&owned_chain("new", "alice")).await.expect("create");
    store.close().await;
    let again = SqlStore::connect(url).await.expect("connect again");
    assert_eq!(
        again.chain("new").await.expect("chain"),
        Some(owned_chain("new", "alice"))
    );
    assert_eq!(again.chain("old").await.expect("chain").and_then(|c| c.owner), None);
    again.close().await;
    // Its tables are chainbox's prefixed ones now, and only those.
    let tables = table_names(url).await;
    for table in ["chains", "journal", "decisions"] {
        assert!(!tables.contains(&table.to_owned()), "{table} is left: {tables:?}");
        assert!(tables.contains(&format!("chainbox_{table}")), "{tables:?}");
    }
}

/// The tables of the database at `url` (PostgreSQL: its current schema's).
async fn table_names(url: &str) -> Vec<String> {
    if url.starts_with("sqlite:") {
        let pool = sqlx::SqlitePool::connect(url).await.expect("raw connect");
        let names = sqlx::query_scalar("SELECT name FROM sqlite_master WHERE type = 'table'")
            .fetch_all(&pool)
            .await
            .expect("tables");
        pool.close().await;
        names
    } else {
        let pool = sqlx::PgPool::connect(url).await.expect("raw connect");
        let names = sqlx::query_scalar(
            "SELECT table_name::TEXT FROM information_schema.tables WHERE table_schema = current_schema()",
        )
        .fetch_all(&pool)
        .await
        .expect("tables");
        pool.close().await;
        names
    }
}

/// Runs `statements` on the database at `url`, outside any store.
async fn raw(url: &str, statements: &[&str]) {
    if url.starts_with("sqlite:") {
        let options = sqlx::sqlite::SqliteConnectOptions::from_str(url)
            .expect("URL")
            .create_if_missing(true);
        let pool = sqlx::SqlitePool::connect_with(options).await.expect("raw connect");
        for sql in statements {
            sqlx::query(sql).execute(&pool).await.expect(sql);
        }
        pool.close().await;
    } else {
        let pool = sqlx::PgPool::connect(url).await.expect("raw connect");
        for sql in statements {
            sqlx::query(sql).execute(&pool).await.expect(sql);
        }
        pool.close().await;
    }
}

/// Another application's `chains` and `journal` share the database: they
/// are left as they are, chainbox's tables are its prefixed ones, and the
/// schema's version is recorded.
async fn another_applications_tables_are_left_alone(url: &str) {
    raw(
        url,
        &[
            "CREATE TABLE chains (id INTEGER PRIMARY KEY, name TEXT)",
            "CREATE TABLE journal (line TEXT)",
            "INSERT INTO chains (id, name) VALUES (1, 'theirs')",
        ],
    )
    .await;
    let store = SqlStore::connect(url).await.expect("connect");
    store.create(&chain("c1")).await.expect("create");
    store.close().await;
    SqlStore::connect(url).await.expect("connect again").close().await;
    let tables = table_names(url).await;
    for table in [
        "chains",
        "journal",
        "chainbox_chains",
        "chainbox_journal",
        "chainbox_schema",
    ] {
        assert!(tables.contains(&table.to_owned()), "{table}: {tables:?}");
    }
}

/// A database a newer chainbox migrated is refused, naming both versions,
/// and left as it is.
async fn a_newer_schema_is_refused(url: &str) {
    SqlStore::connect(url).await.expect("connect").close().await;
    raw(url, &["INSERT INTO chainbox_schema (version) VALUES (99)"]).await;
    let refused = SqlStore::connect(url).await.map(drop);
    let Err(e) = refused else { panic!("connected") };
    assert!(
        matches!(
            e,
            StoreError::SchemaTooNew {
                found: 99,
                supported: 2
            }
        ),
        "{e:?}"
    );
    assert!(e.to_string().contains("version 99"), "{e}");
}

#[tokio::test(flavor = "multi_thread")]
async fn another_applications_tables_in_a_shared_sqlite_database_are_left_alone() {
    let dir = tempfile::tempdir().expect("tempdir");
    another_applications_tables_are_left_alone(&format!("sqlite:{}", dir.path().join("shared.db").display())).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn another_applications_tables_in_a_shared_postgres_database_are_left_alone() {
    let Some(server) = PgServer::start() else { return };
    another_applications_tables_are_left_alone(&server.create_database("shared").await).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sqlite_database_of_a_newer_schema_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    a_newer_schema_is_refused(&format!("sqlite:{}", dir.path().join("newer.db").display())).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_postgres_database_of_a_newer_schema_is_refused() {
    let Some(server) = PgServer::start() else { return };
    a_newer_schema_is_refused(&server.create_database("newer").await).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sqlite_database_made_before_owners_gets_the_owner_columns_on_connect() {
    let dir = tempfile::tempdir().expect("tempdir");
    let url = format!("sqlite:{}", dir.path().join("old.db").display());
    raw(&url, &[CHAINS_BEFORE_OWNERS, OLD_CHAIN]).await;
    the_columns_are_added_to_a_database_made_before_owners(&url).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_postgres_database_made_before_owners_gets_the_owner_columns_on_connect() {
    let Some(server) = PgServer::start() else { return };
    let url = server.create_database("before_owners").await;
    raw(&url, &[CHAINS_BEFORE_OWNERS, OLD_CHAIN]).await;
    the_columns_are_added_to_a_database_made_before_owners(&url).await;
}

/// The `tasks` table as chainbox made it before a session's cell could be
/// a task (its id a key into `chains`), and one task of that time.
const TASKS_BEFORE_CHAIN_ID: [&str; 2] = [
    "CREATE TABLE tasks (
        task_id TEXT PRIMARY KEY REFERENCES chains (chain_id),
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        ttl_ms BIGINT NOT NULL,
        cancel_requested BOOLEAN NOT NULL DEFAULT FALSE,
        outcome TEXT
    )",
    "INSERT INTO tasks (task_id, created_at, updated_at, ttl_ms) \
     VALUES ('old', '2026-12-07T06:00:00Z', '2026-12-07T06:00:00Z', 86400000)",
];

/// A store on a database whose `tasks` lack `chain_id`: the old task reads
/// back as its own chain's, and a task of a session (an id that is no
/// chain's) can be stored.
async fn tasks_get_chain_id_on_a_database_made_before_it(url: &str) {
    let store = SqlStore::connect(url).await.expect("connect to the old database");
    let old = store.task("old").await.expect("task").expect("the old task");
    assert_eq!(old.chain_id, "old");
    let task = chainbox::store::StoredTask {
        task_id: "task_1".into(),
        chain_id: "old".into(),
        ..old
    };
    store.create_task(None, &task).await.expect("a session's task");
    assert_eq!(
        store.task("task_1").await.expect("task").map(|t| t.chain_id),
        Some("old".into())
    );
    store.close().await;
    SqlStore::connect(url).await.expect("connect again").close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sqlite_database_made_before_tasks_had_chain_ids_gets_them_on_connect() {
    let dir = tempfile::tempdir().expect("tempdir");
    let url = format!("sqlite:{}", dir.path().join("old.db").display());
    raw(
        &url,
        &[
            CHAINS_BEFORE_OWNERS,
            OLD_CHAIN,
            TASKS_BEFORE_CHAIN_ID[0],
            TASKS_BEFORE_CHAIN_ID[1],
        ],
    )
    .await;
    tasks_get_chain_id_on_a_database_made_before_it(&url).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_postgres_database_made_before_tasks_had_chain_ids_gets_them_on_connect() {
    let Some(server) = PgServer::start() else { return };
    let url = server.create_database("before_task_chain_ids").await;
    raw(
        &url,
        &[
            CHAINS_BEFORE_OWNERS,
            OLD_CHAIN,
            TASKS_BEFORE_CHAIN_ID[0],
            TASKS_BEFORE_CHAIN_ID[1],
        ],
    )
    .await;
    tasks_get_chain_id_on_a_database_made_before_it(&url).await;
}

/// A database of schema version 1 (before sweeps): made by this
/// chainbox, then its version-2 parts taken out, with a chain finished
/// then.
const VERSION_1: [&str; 4] = [
    "ALTER TABLE chainbox_chains DROP COLUMN finished_at",
    "DROP TABLE chainbox_locks",
    "DELETE FROM chainbox_schema WHERE version = 2",
    "INSERT INTO chainbox_chains (chain_id, script, policy, seed, created_at, finished) \
     VALUES ('done', '1', '{\"retention_s\": 0.5}', '7', '2026-12-01T10:00:00Z', '{\"status\": \"ok\"}')",
];

/// A version-1 database gets the finish times and the lock table on
/// connect (version 2); its chain finished before counts its retention
/// from the first sweep that sees it, and then goes.
async fn a_database_of_version_1_is_migrated_for_sweeps(url: &str) {
    SqlStore::connect(url).await.expect("connect").close().await;
    raw(url, &VERSION_1).await;
    let store: Arc<dyn ChainStore> = Arc::new(SqlStore::connect(url).await.expect("connect to version 1"));
    let options = chainbox::store::sweep::SweepOptions::default();
    let first = chainbox::store::sweep::sweep(&store, None, &options)
        .await
        .expect("sweeps");
    assert_eq!((first.deleted, first.remaining.finished), (0, 1), "{first:?}");
    tokio::time::sleep(Duration::from_millis(700)).await;
    let later = chainbox::store::sweep::sweep(&store, None, &options)
        .await
        .expect("sweeps");
    assert_eq!((later.deleted, later.remaining.chains), (1, 0), "{later:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sqlite_database_of_version_1_is_migrated_for_sweeps() {
    let dir = tempfile::tempdir().expect("tempdir");
    a_database_of_version_1_is_migrated_for_sweeps(&format!("sqlite:{}", dir.path().join("v1.db").display())).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_postgres_database_of_version_1_is_migrated_for_sweeps() {
    let Some(server) = PgServer::start() else { return };
    a_database_of_version_1_is_migrated_for_sweeps(&server.create_database("version_1").await).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_store_url_of_an_unknown_scheme_is_refused_by_its_scheme_alone() {
    let refused = store::connect("mysql://root:hunter2@db/chains").await.map(drop);
    let Err(e) = refused else { panic!("connected") };
    assert!(matches!(e, StoreError::UnknownScheme(ref s) if s == "mysql"), "{e:?}");
    assert!(!e.to_string().contains("hunter2"), "{e}");
    assert!(e.to_string().contains("sqlite:PATH"), "{e}");
    let memory = store::connect("memory:").await.expect("memory:");
    assert_eq!(memory.chain("c1").await.expect("chain"), None);
}

// ---- A throwaway PostgreSQL ----

/// A PostgreSQL server of the test's own: a cluster in a temporary
/// directory, listening only on a Unix socket there, trust auth, stopped
/// (immediately: nothing in it is worth a checkpoint) when dropped. Other
/// areas' tests start theirs too (`durable_serve`).
pub(crate) struct PgServer {
    bin: PathBuf,
    dir: tempfile::TempDir,
    /// Root may not run PostgreSQL: then its user's (or nobody's) ids.
    run_as: Option<(u32, u32)>,
}

impl PgServer {
    /// Starts one, or says why not: `None` (skipped) only outside CI.
    pub(crate) fn start() -> Option<Self> {
        let Some(bin) = pg_bin() else {
            let why = "PostgreSQL's initdb and pg_ctl were not found (set CHAINBOX_PG_BIN to their directory, \
                       or install Debian's `postgresql`)";
            assert!(
                std::env::var_os("CI").is_none(),
                "CI must test the PostgreSQL store: {why}"
            );
            eprintln!("\n!!! SKIPPED: the PostgreSQL store tests: {why}\n");
            return None;
        };
        let dir = tempfile::Builder::new()
            .prefix("chainbox-pg")
            .tempdir()
            .expect("tempdir");
        let run_as = unprivileged_ids();
        if let Some((uid, gid)) = run_as {
            std::os::unix::fs::chown(dir.path(), Some(uid), Some(gid)).expect("chown the server's directory");
        }
        let server = Self { bin, dir, run_as };
        server.run(
            "initdb",
            &[
                "-D",
                "data",
                "-U",
                "chainbox",
                "-A",
                "trust",
                "-E",
                "UTF8",
                "--locale=C",
                "--no-sync",
            ],
        );
        let conf = format!(
            "\nlisten_addresses = ''\nunix_socket_directories = '{}'\nport = 5432\nfsync = off\n",
            server.dir.path().display()
        );
        let conf_path = server.dir.path().join("data/postgresql.conf");
        let mut text = std::fs::read_to_string(&conf_path).expect("postgresql.conf");
        text.push_str(&conf);
        std::fs::write(&conf_path, text).expect("postgresql.conf");
        server.run("pg_ctl", &["start", "-D", "data", "-l", "log", "-w", "-t", "60"]);
        Some(server)
    }

    fn run(&self, tool: &str, args: &[&str]) {
        use std::os::unix::process::CommandExt;
        let mut command = Command::new(self.bin.join(tool));
        command.args(args).current_dir(self.dir.path());
        if let Some((uid, gid)) = self.run_as {
            command.uid(uid).gid(gid);
        }
        let out = command.output().unwrap_or_else(|e| panic!("{tool}: {e}"));
        let log = std::fs::read_to_string(self.dir.path().join("log")).unwrap_or_default();
        assert!(
            out.status.success(),
            "{tool} {args:?}: {}\n{}\n{}\nserver log:\n{log}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    fn url(&self, database: &str) -> String {
        format!(
            "postgres://chainbox@localhost/{database}?host={}",
            self.dir.path().display()
        )
    }

    /// A fresh database for one behaviour.
    async fn database(&self, name: &str) -> Backend {
        Backend::Url(self.create_database(name).await)
    }

    /// Creates a fresh database and returns its URL.
    pub(crate) async fn create_database(&self, name: &str) -> String {
        let admin = sqlx::PgPool::connect(&self.url("postgres"))
            .await
            .expect("connect to postgres");
        sqlx::query(&format!("CREATE DATABASE {name}"))
            .execute(&admin)
            .await
            .expect("create database");
        admin.close().await;
        self.url(name)
    }
}

impl Drop for PgServer {
    fn drop(&mut self) {
        use std::os::unix::process::CommandExt;
        let mut command = Command::new(self.bin.join("pg_ctl"));
        command
            .args(["stop", "-D", "data", "-m", "immediate", "-w"])
            .current_dir(self.dir.path());
        if let Some((uid, gid)) = self.run_as {
            command.uid(uid).gid(gid);
        }
        let _ = command.output();
    }
}

/// The directory of `initdb` and `pg_ctl`: `CHAINBOX_PG_BIN`, else the
/// first `PATH` entry with both, else the newest of Debian's
/// `/usr/lib/postgresql/*/bin`.
fn pg_bin() -> Option<PathBuf> {
    let has_both = |dir: &Path| dir.join("initdb").is_file() && dir.join("pg_ctl").is_file();
    if let Some(dir) = std::env::var_os("CHAINBOX_PG_BIN") {
        let dir = PathBuf::from(dir);
        assert!(
            has_both(&dir),
            "CHAINBOX_PG_BIN={} holds no initdb and pg_ctl",
            dir.display()
        );
        return Some(dir);
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    if let Some(dir) = std::env::split_paths(&path).find(|d| has_both(d)) {
        return Some(dir);
    }
    let mut debian: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| Some((e.file_name().to_str()?.parse().ok()?, e.path().join("bin"))))
        .filter(|(_, bin)| has_both(bin))
        .collect();
    debian.sort();
    debian.pop().map(|(_, bin)| bin)
}

/// PostgreSQL refuses to run as root: as root, the ids of the `postgres`
/// user (Debian's package makes it), else of `nobody`.
fn unprivileged_ids() -> Option<(u32, u32)> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return None;
    }
    let passwd = std::fs::read_to_string("/etc/passwd").expect("/etc/passwd");
    ["postgres", "nobody"].iter().find_map(|user| {
        passwd.lines().find_map(|line| {
            let fields: Vec<&str> = line.split(':').collect();
            (fields.first() == Some(user) && fields.len() > 3)
                .then(|| Some((fields[2].parse().ok()?, fields[3].parse().ok()?)))
                .flatten()
        })
    })
}
