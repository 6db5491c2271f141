//! Sweeps ([`chainbox::store::sweep`], `chainbox gc`, `serve --state`):
//! the durable chains no process will finish are finished (`abandoned`,
//! `expired`), finished ones are deleted after their `retention_s`, old
//! unpinned artifacts are deleted; and nothing a live or suspended chain
//! needs is removed. Each behaviour runs on SQLite with a directory of
//! artifacts (`sqlite::NAME`) and on a real PostgreSQL with a real S3
//! server (`postgres_s3::behaves_on_postgres_and_s3`, every behaviour on
//! one pair of servers, a fresh database and prefix each).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use chainbox::approval::ApprovalDecision;
use chainbox::durable::Durable;
use chainbox::store::sweep::{self, SweepError, SweepOptions, SweepReport};
use chainbox::store::{self, ChainStore, Claim, Lock, StoreCounts, StoredChain};
use chainbox::{
    Approval, ArtifactRef, ArtifactStore, ChainPolicy, ChainStatus, Engine, EngineConfig, FsArtifactStore,
    PythonChoice, ToolRegistry, ToolRisk,
};
use serde_json::{Value, json};

use crate::fixtures::{FnTool, assert_ok, tool};

/// A chain that offloads a result (`rows`: 50 rows of 100 bytes, past the
/// 4096 inline bytes), then waits on a critical call, then reads the
/// offloaded rows back.
const OFFLOADS_THEN_WAITS: &str =
    "big = await rows(n=50)\nr = await wire(amount=5)\n[r, load_artifact(big)['rows'][49][:7]]";

/// A chain that offloads a result and ends.
const OFFLOADS: &str = "big = await rows(n=50)\nload_artifact(big)['rows'][0][:7]";

/// A short retention, so a test sees it pass.
fn policy() -> ChainPolicy {
    ChainPolicy {
        python: PythonChoice::Monty,
        retention_s: 1.0,
        ..ChainPolicy::default()
    }
}

/// How long to wait for the retention of [`policy`] (and a session's life
/// of a second) to pass.
const PAST_LIMITS: Duration = Duration::from_millis(1300);

/// A sweep that deletes any unpinned artifact and counts a claim dead as
/// soon as its lease has run out.
fn eager() -> SweepOptions {
    SweepOptions {
        artifact_grace: Duration::ZERO,
        claim_grace: Duration::ZERO,
    }
}

/// `rows(n)`, `wire(amount)` (critical), `mark()` (sets `marked`) and
/// `nap()` (answers after 3 s).
fn registry(marked: &Arc<AtomicBool>) -> ToolRegistry {
    let marked = marked.clone();
    ToolRegistry::from_local([
        Arc::new(tool("rows", &["n"], |args| {
            let n = args.get("n").and_then(Value::as_u64).unwrap_or(0);
            Ok(json!({"rows": (0..n).map(|i| format!("row {i:03} {}", "x".repeat(92))).collect::<Vec<_>>()}))
        })) as Arc<dyn chainbox::tools::Tool>,
        Arc::new(tool("wire", &["amount"], |_| Ok(json!("sent"))).with_risk(ToolRisk::Critical)),
        Arc::new(tool("mark", &[], move |_| {
            marked.store(true, Ordering::SeqCst);
            Ok(json!(true))
        })),
        Arc::new(FnTool {
            delay: Duration::from_secs(3),
            ..tool("nap", &[], |_| Ok(json!("rested")))
        }),
    ])
    .expect("registry")
}

/// One behaviour's stores: a chain store and an artifact store, fresh, and
/// how to open another handle on each (another process's).
struct Stores {
    store_url: String,
    artifacts: Arc<dyn ArtifactStore>,
    /// Another handle on the same artifacts: pins of this process's chains
    /// are not its own (a directory's pins live in the process).
    other_artifacts: Arc<dyn ArtifactStore>,
}

/// What a behaviour works with: its stores, and durable chains on an
/// engine of its own whose artifacts go to the artifact store.
struct Setup {
    store: Arc<dyn ChainStore>,
    artifacts: Arc<dyn ArtifactStore>,
    other_artifacts: Arc<dyn ArtifactStore>,
    durable: Durable,
    registry: ToolRegistry,
    marked: Arc<AtomicBool>,
}

impl Setup {
    async fn new(stores: Stores) -> Self {
        let store = store::connect(&stores.store_url).await.expect("the chain store");
        let engine = Engine::with_config(EngineConfig {
            artifacts: Some(stores.artifacts.clone()),
            max_concurrent_chains: 4,
            prefault: false,
            ..EngineConfig::default()
        })
        .expect("engine");
        let marked = Arc::new(AtomicBool::new(false));
        Setup {
            durable: Durable::new(engine, store.clone()),
            store,
            artifacts: stores.artifacts,
            other_artifacts: stores.other_artifacts,
            registry: registry(&marked),
            marked,
        }
    }

    /// Runs `script` to its suspension under `policy`: the chain's id and
    /// the artifacts it stored.
    async fn suspended(&self, script: &str, policy: &ChainPolicy) -> (String, Vec<ArtifactRef>) {
        let r = self
            .durable
            .run(script, &self.registry, policy, &Approval::defer())
            .await
            .expect("runs");
        assert_eq!(r.status, ChainStatus::Suspended, "{r:#?}");
        let refs = r.artifacts.iter().map(|a| a.artifact_ref).collect();
        (r.chain_id.expect("a chain id"), refs)
    }

    async fn sweep(&self, options: &SweepOptions) -> SweepReport {
        sweep::sweep(&self.store, Some(&self.artifacts), options)
            .await
            .expect("sweeps")
    }

    /// The chain's stored result, if it has finished.
    async fn finished(&self, chain_id: &str) -> Option<Value> {
        match self.store.claim(chain_id, "a test", Duration::from_millis(1)).await {
            Ok(Claim::Finished(result)) => Some(result),
            Ok(Claim::Won) => {
                self.store.release(chain_id, "a test").await.expect("release");
                None
            }
            Ok(Claim::HeldBy(_)) => None,
            Err(e) => panic!("claim {chain_id}: {e}"),
        }
    }

    fn has(&self, r: &ArtifactRef) -> bool {
        self.other_artifacts
            .get(r)
            .expect("the artifact store answers")
            .is_some()
    }
}

/// A chain's row as a first run that died left it: created `created_at`,
/// claimed by a node whose lease ran out at once, no suspension, no result.
async fn died_first_run(store: &Arc<dyn ChainStore>, chain_id: &str) {
    store
        .create(&StoredChain {
            chain_id: chain_id.to_owned(),
            script: "await wire(amount=1)".to_owned(),
            policy: serde_json::to_value(policy()).expect("policy"),
            seed: 7,
            created_at: "2026-01-01T00:00:00Z".to_owned(),
            owner: None,
        })
        .await
        .expect("create");
    let claim = store
        .claim(chain_id, "a node that died", Duration::from_millis(1))
        .await
        .expect("claim");
    assert_eq!(claim, Claim::Won);
    tokio::time::sleep(Duration::from_millis(20)).await;
}

// ---- The behaviours ----

/// Chains that finished (ok, resumed to their end, failed) are deleted
/// with their journals and decisions once `retention_s` has passed, and
/// their artifacts with them: the store's counts return to zero. Before
/// the retention, a finished chain stays.
async fn counts_return_to_zero_after_the_retention(stores: Stores) {
    let s = Setup::new(stores).await;
    let kept = ChainPolicy {
        retention_s: 4.0,
        ..policy()
    };
    let run = |script: &'static str| {
        let (durable, registry, policy) = (s.durable.clone(), s.registry.clone(), kept.clone());
        async move {
            durable
                .run(script, &registry, &policy, &Approval::defer())
                .await
                .expect("runs")
        }
    };
    let ok = run(OFFLOADS).await;
    assert_ok(&ok);
    let waiting = run(OFFLOADS_THEN_WAITS).await;
    assert_eq!(waiting.status, ChainStatus::Suspended, "{waiting:#?}");
    let resumed = waiting.chain_id.clone().expect("a chain id");
    s.durable
        .decide(&resumed, ApprovalDecision::Approved, "test")
        .await
        .expect("decide");
    let done = s
        .durable
        .resume(&resumed, &s.registry, &Approval::defer())
        .await
        .expect("resume");
    assert_ok(&done);
    let failed = run("1 / 0").await;
    assert_eq!(failed.status, ChainStatus::Error);
    let refs: Vec<ArtifactRef> = ok
        .artifacts
        .iter()
        .chain(&done.artifacts)
        .map(|a| a.artifact_ref)
        .collect();
    assert_eq!(refs.len(), 2);

    let early = s.sweep(&eager()).await;
    let failed_id = failed.chain_id.clone().expect("a chain id");
    assert!(s.store.chain(&failed_id).await.expect("read").is_some(), "{early:?}");
    let before = s.store.counts().await.expect("counts");
    assert!(before.journal >= 1 && before.finished >= 1, "{before:?}");

    tokio::time::sleep(Duration::from_millis(4300)).await;
    let swept = s.sweep(&eager()).await;
    assert_eq!(early.deleted + swept.deleted, 3, "{early:?} {swept:?}");
    assert_eq!(swept.remaining, StoreCounts::default(), "{swept:?}");
    assert_eq!(s.store.counts().await.expect("counts"), StoreCounts::default());
    for r in &refs {
        assert!(!s.has(r), "{r} outlived its chains");
    }
    assert_eq!(s.store.chain(&resumed).await.expect("read"), None);
    let again = s.sweep(&eager()).await;
    assert_eq!(again, SweepReport::default(), "a second sweep has nothing to do");
}

/// A chain suspended across sweeps (its call waiting within
/// `approval_expires_s`) is left as it is, its offloaded result kept even
/// by a process that does not pin it, and resumes to its end.
async fn a_chain_suspended_across_a_sweep_resumes(stores: Stores) {
    let s = Setup::new(stores).await;
    let r = s
        .durable
        .run(OFFLOADS_THEN_WAITS, &s.registry, &policy(), &Approval::defer())
        .await
        .expect("runs");
    assert_eq!(r.status, ChainStatus::Suspended, "{r:#?}");
    let chain_id = r.chain_id.clone().expect("a chain id");
    let offloaded = r.artifacts[0].artifact_ref;
    // Another process's sweep: it holds none of this process's pins.
    let elsewhere = sweep::sweep(&s.store, Some(&s.other_artifacts), &eager())
        .await
        .expect("sweeps");
    assert_eq!((elsewhere.abandoned, elsewhere.expired, elsewhere.deleted), (0, 0, 0));
    assert_eq!(elsewhere.artifacts_deleted, 0, "the journal names it");
    s.sweep(&eager()).await;
    assert!(s.has(&offloaded));
    assert_eq!(s.finished(&chain_id).await, None);
    s.durable
        .decide(&chain_id, ApprovalDecision::Approved, "test")
        .await
        .expect("decide");
    s.sweep(&eager()).await;
    let done = s
        .durable
        .resume(&chain_id, &s.registry, &Approval::defer())
        .await
        .expect("resume");
    assert_ok(&done);
    assert_eq!(done.output, json!(["sent", "row 049"]));
}

/// A chain whose run holds a live claim (it waits in a slow call) is never
/// swept, however eager the sweep: it runs to its own end.
async fn a_chain_whose_lease_is_live_is_never_swept(stores: Stores) {
    let s = Setup::new(stores).await;
    let durable = s.durable.clone();
    let registry = s.registry.clone();
    let running = tokio::spawn(async move {
        durable
            .run("await mark()\nawait nap()", &registry, &policy(), &Approval::defer())
            .await
    });
    while !s.marked.load(Ordering::SeqCst) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let swept = s.sweep(&eager()).await;
    assert_eq!((swept.abandoned, swept.expired), (0, 0), "{swept:?}");
    assert_eq!(swept.remaining.chains, 1);
    let r = running.await.expect("joins").expect("runs");
    assert_ok(&r);
    assert_eq!(r.output, json!("rested"));
    let stored = s.finished(&r.chain_id.expect("a chain id")).await.expect("finished");
    assert_eq!(stored["status"], "ok", "its own result: {stored}");
}

/// A first run that died before any suspension (its claim's lease ran out,
/// no pending call, no result) is finished as `abandoned`, once its claim
/// has been dead for the claim grace: a default sweep right after its lease
/// ran out leaves it.
async fn an_abandoned_first_run_is_finished_as_abandoned(stores: Stores) {
    let s = Setup::new(stores).await;
    died_first_run(&s.store, "chain_died").await;
    let patient = s.sweep(&SweepOptions::default()).await;
    assert_eq!(patient.abandoned, 0, "within the claim grace: {patient:?}");
    let swept = s.sweep(&eager()).await;
    assert_eq!((swept.abandoned, swept.expired), (1, 0), "{swept:?}");
    let result = s.finished("chain_died").await.expect("finished");
    assert_eq!(result["status"], "error", "{result}");
    assert_eq!(result["error"]["kind"], "abandoned", "{result}");
    assert_eq!(result["chain_id"], "chain_died", "{result}");
    let again = s.sweep(&eager()).await;
    assert_eq!(again.abandoned, 0, "finished once");
}

/// A chain suspended past `approval_expires_s` is finished as `expired`,
/// its pins released: the same sweep deletes the result it had offloaded.
async fn an_approval_past_its_expiry_is_finished_as_expired_and_its_pins_released(stores: Stores) {
    let s = Setup::new(stores).await;
    // Long enough for the sweep right after the suspension on a slow machine.
    let expires = ChainPolicy {
        approval_expires_s: 3.0,
        ..policy()
    };
    let (chain_id, refs) = s.suspended(OFFLOADS_THEN_WAITS, &expires).await;
    assert_eq!(refs.len(), 1);
    let within = s.sweep(&eager()).await;
    assert_eq!(within.expired, 0, "{within:?}");
    assert!(s.has(&refs[0]), "pinned while it waits");
    tokio::time::sleep(Duration::from_millis(3300)).await;
    let swept = s.sweep(&eager()).await;
    assert_eq!((swept.expired, swept.abandoned), (1, 0), "{swept:?}");
    let result = s.finished(&chain_id).await.expect("finished");
    assert_eq!(result["error"]["kind"], "expired", "{result}");
    assert!(s.store.pending().await.expect("pending").is_empty());
    assert!(!s.has(&refs[0]), "its pin was released and the artifact deleted");
    let late = s.durable.decide(&chain_id, ApprovalDecision::Approved, "test").await;
    assert!(late.is_err(), "nothing waits on a decision any more: {late:?}");
}

/// Artifacts no chain pins go once older than the grace; pinned ones and
/// young ones stay.
async fn unpinned_old_artifacts_are_removed_and_pinned_ones_kept(stores: Stores) {
    let s = Setup::new(stores).await;
    let loose = s.artifacts.put(b"nobody's", "text/plain").expect("put");
    let pinned = s
        .artifacts
        .put_pinned("chain_keeps", b"a chain's", "text/plain")
        .expect("put");
    let young = s
        .sweep(&SweepOptions {
            artifact_grace: Duration::from_secs(3600),
            ..eager()
        })
        .await;
    assert_eq!(young.artifacts_deleted, 0, "{young:?}");
    assert!(s.has(&loose));
    let swept = s.sweep(&eager()).await;
    assert_eq!(swept.artifacts_deleted, 1, "{swept:?}");
    assert!(!s.has(&loose));
    assert!(s.has(&pinned));
}

/// One process sweeps a store at a time: a sweep finding the lock held
/// says who holds it and does nothing.
async fn only_one_process_sweeps_a_store_at_a_time(stores: Stores) {
    let s = Setup::new(stores).await;
    died_first_run(&s.store, "chain_died").await;
    let held = s
        .store
        .take_lock(sweep::SWEEP_LOCK, "another node", Duration::from_secs(60))
        .await
        .expect("lock");
    assert_eq!(held, Lock::Taken);
    let refused = sweep::sweep(&s.store, Some(&s.artifacts), &eager()).await;
    match refused {
        Err(SweepError::Busy { holder }) => assert_eq!(holder, "another node"),
        other => panic!("swept under another's lock: {other:?}"),
    }
    assert_eq!(s.finished("chain_died").await, None, "nothing was done");
    s.store
        .release_lock(sweep::SWEEP_LOCK, "another node")
        .await
        .expect("unlock");
    assert_eq!(s.sweep(&eager()).await.abandoned, 1);
}

/// A session past `session_expires_s` is ended and, after its retention,
/// deleted; a live session beside it is kept and runs its next cell.
async fn an_expired_session_is_ended_and_deleted_but_a_live_one_is_kept(stores: Stores) {
    let s = Setup::new(stores).await;
    let brief = ChainPolicy {
        session_expires_s: 1.0,
        ..policy()
    };
    let cell = |session: String, code: &'static str, policy: ChainPolicy| {
        let (durable, registry) = (s.durable.clone(), s.registry.clone());
        async move {
            durable
                .run_cell(&session, code, &registry, &policy, &Approval::defer())
                .await
                .expect("runs")
        }
    };
    let short = cell("new".into(), "x = 1\nx", brief.clone()).await;
    assert_ok(&short);
    let long = cell("new".into(), "y = 2\ny", policy()).await;
    assert_ok(&long);
    let short_id = short.session.expect("a session").session_id;
    let long_id = long.session.expect("a session").session_id;

    tokio::time::sleep(PAST_LIMITS).await;
    let ended = s.sweep(&eager()).await;
    assert_eq!(ended.sessions_ended, 1, "{ended:?}");
    let listed = s.durable.sessions().await.expect("sessions");
    let state_of = |id: &str| listed.iter().find(|l| l.session_id == id).map(|l| l.state.clone());
    assert!(
        state_of(&short_id).is_some_and(|state| state.starts_with("expired at")),
        "{listed:?}"
    );
    assert_eq!(state_of(&long_id).as_deref(), Some("live"));

    tokio::time::sleep(PAST_LIMITS).await;
    let deleted = s.sweep(&eager()).await;
    assert_eq!(deleted.deleted, 1, "{deleted:?}");
    assert_eq!(s.store.session(&short_id).await.expect("read"), None);
    let next = cell(long_id, "y + 1", policy()).await;
    assert_ok(&next);
    assert_eq!(next.output, json!(3));
}

/// A session whose cell waits on a decision is kept past its own life
/// while the decision is within `approval_expires_s`, and resumes.
async fn a_session_whose_cell_waits_on_a_decision_within_its_limit_is_kept(stores: Stores) {
    let s = Setup::new(stores).await;
    let brief = ChainPolicy {
        session_expires_s: 1.0,
        ..policy()
    };
    let waiting = s
        .durable
        .run_cell("new", "await wire(amount=1)", &s.registry, &brief, &Approval::defer())
        .await
        .expect("runs");
    assert_eq!(waiting.status, ChainStatus::Suspended, "{waiting:#?}");
    let session_id = waiting.session.expect("a session").session_id;
    tokio::time::sleep(PAST_LIMITS).await;
    let swept = s.sweep(&eager()).await;
    assert_eq!((swept.sessions_ended, swept.expired), (0, 0), "{swept:?}");
    s.durable
        .decide(&session_id, ApprovalDecision::Approved, "test")
        .await
        .expect("decide");
    let resumed = s
        .durable
        .resume(&session_id, &s.registry, &Approval::defer())
        .await
        .expect("resume");
    assert_ok(&resumed);
    assert_eq!(resumed.output, json!("sent"));
}

// ---- The backends ----

/// Each behaviour above on SQLite with a directory of artifacts
/// (`sqlite::NAME`), and all of them on PostgreSQL with an S3 server.
macro_rules! suite {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread")]
                async fn $name() {
                    let dir = tempfile::tempdir().expect("tempdir");
                    super::$name(super::sqlite_stores(dir.path())).await;
                }
            )*
        }

        mod postgres_s3 {
            #[tokio::test(flavor = "multi_thread")]
            async fn behaves_on_postgres_and_s3() {
                let Some(pg) = crate::store::PgServer::start() else { return };
                let Some(s3) = crate::s3::S3Server::start() else { return };
                let mut n = 0;
                $(
                    n += 1;
                    eprintln!("postgres and s3: {}", stringify!($name));
                    let stores = super::Stores {
                        store_url: pg.create_database(&format!("sweeps_{n}")).await,
                        artifacts: std::sync::Arc::new(s3.store(&format!("sweeps/{n}"))),
                        other_artifacts: std::sync::Arc::new(s3.store(&format!("sweeps/{n}"))),
                    };
                    super::$name(stores).await;
                )*
            }
        }
    };
}

suite!(
    counts_return_to_zero_after_the_retention,
    a_chain_suspended_across_a_sweep_resumes,
    a_chain_whose_lease_is_live_is_never_swept,
    an_abandoned_first_run_is_finished_as_abandoned,
    an_approval_past_its_expiry_is_finished_as_expired_and_its_pins_released,
    unpinned_old_artifacts_are_removed_and_pinned_ones_kept,
    only_one_process_sweeps_a_store_at_a_time,
    an_expired_session_is_ended_and_deleted_but_a_live_one_is_kept,
    a_session_whose_cell_waits_on_a_decision_within_its_limit_is_kept,
);

/// A fresh SQLite file and artifact directory in `dir`.
fn sqlite_stores(dir: &std::path::Path) -> Stores {
    let artifacts = dir.join("artifacts");
    Stores {
        store_url: format!("sqlite:{}", dir.join("state.db").display()),
        artifacts: Arc::new(FsArtifactStore::new(&artifacts).expect("artifacts")),
        other_artifacts: Arc::new(FsArtifactStore::new(&artifacts).expect("artifacts")),
    }
}

/// `chainbox gc --state URL --json` sweeps once and prints its counts:
/// a first run that died, finished as `abandoned` long enough ago, is gone
/// and the store is empty.
#[tokio::test(flavor = "multi_thread")]
async fn gc_on_the_command_line_sweeps_once_and_prints_the_counts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let url = format!("sqlite:{}", dir.path().join("state.db").display());
    let store = store::connect(&url).await.expect("connect");
    died_first_run(&store, "chain_died").await;
    let options = SweepOptions {
        claim_grace: Duration::ZERO,
        ..SweepOptions::default()
    };
    let first = sweep::sweep(&store, None, &options).await.expect("sweeps");
    assert_eq!(first.abandoned, 1);
    tokio::time::sleep(PAST_LIMITS).await;
    let (code, out, err) = crate::durable_cli::chainbox(&["gc", "--state", &url, "--json"]);
    assert_eq!(code, Some(0), "{out}\n{err}");
    let report: Value = serde_json::from_str(&out).expect("one JSON object");
    assert_eq!(report["deleted"], 1, "{report}");
    assert_eq!(report["remaining"]["chains"], 0, "{report}");
    let (code, out, err) = crate::durable_cli::chainbox(&["gc", "--state", &url]);
    assert_eq!(code, Some(0), "{out}\n{err}");
    assert!(out.contains("deleted 0 finished chains"), "{out}");
}

/// `chainbox serve --state URL --sweep-every 1` sweeps while it serves: a
/// chain suspended long past its `approval_expires_s` is finished as
/// `expired` within seconds, with no request made.
#[tokio::test(flavor = "multi_thread")]
async fn serve_with_a_store_sweeps_it_periodically() {
    let dir = tempfile::tempdir().expect("tempdir");
    let url = format!("sqlite:{}", dir.path().join("state.db").display());
    let store = store::connect(&url).await.expect("connect");
    died_first_run(&store, "chain_waits").await;
    let pending = chainbox::result::PendingCall {
        seq: 1,
        tool: "wire".into(),
        arguments: serde_json::Map::new(),
        risk: ToolRisk::Critical,
        requested_at: "2026-01-01T00:00:00Z".into(),
        provenance: Vec::new(),
    };
    store.suspend("chain_waits", &pending).await.expect("suspend");
    store.release("chain_waits", "a node that died").await.expect("release");
    let mut serve = std::process::Command::new(env!("CARGO_BIN_EXE_chainbox"))
        .args(["serve", "--state", &url, "--sweep-every", "1"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("serve starts");
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    // Polled without claiming it: a claim would keep the sweep off it.
    let mut swept = false;
    while !swept && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(200)).await;
        swept = store.pending_of("chain_waits").await.expect("read").is_none();
    }
    drop(serve.stdin.take());
    let _ = serve.kill();
    let out = serve.wait_with_output().expect("serve ends");
    assert!(swept, "not swept: {}", String::from_utf8_lossy(&out.stderr));
    let Ok(Claim::Finished(result)) = store.claim("chain_waits", "a test", Duration::from_millis(1)).await else {
        panic!("not finished");
    };
    assert_eq!(result["error"]["kind"], "expired", "{result}");
}
