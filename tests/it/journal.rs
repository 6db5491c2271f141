//! A chain's journal ([`chainbox::journal`]): a chain run again with its
//! journal is answered from it, so its tools do not run twice, and a script
//! that asks for another call than the journal holds ends `replay_diverged`
//! without running it. On both guests.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use chainbox::journal::{Journal, MemoryJournal};
use chainbox::{
    Approval, ChainPolicy, ChainRunResult, ChainStatus, ErrorKind, PythonChoice, RunOptions, ToolRegistry, ToolRisk,
};
use serde_json::{Value, json};

use crate::fixtures::{assert_ok, engine, fn_tool, unchecked};

/// `bump(n)`: counts its runs in `runs` and answers `10 * n`.
fn counting_registry(runs: &Arc<AtomicU32>) -> ToolRegistry {
    let runs = runs.clone();
    ToolRegistry::from_local([fn_tool("bump", &["n"], move |args| {
        runs.fetch_add(1, Ordering::SeqCst);
        let n = args.get("n").and_then(Value::as_i64).unwrap_or(0);
        Ok(json!(10 * n))
    })])
    .expect("registry")
}

async fn run_with_journal(
    python: PythonChoice,
    script: &str,
    registry: &ToolRegistry,
    journal: &Arc<MemoryJournal>,
) -> ChainRunResult {
    let policy = ChainPolicy { python, ..unchecked() };
    let options = RunOptions {
        journal: Some(journal.clone() as Arc<dyn Journal>),
        ..RunOptions::default()
    };
    engine()
        .run_with(script, registry, &policy, &Approval::auto(ToolRisk::Safe), options)
        .await
}

const FIRST: &str = "a = await bump(n=1)\nb = await bump(n=2)\n[a, b]";

#[tokio::test(flavor = "multi_thread")]
async fn a_chain_run_again_with_its_journal_is_answered_from_it_and_its_tools_do_not_run_again() {
    for python in [PythonChoice::Monty, PythonChoice::Cpython] {
        let runs = Arc::new(AtomicU32::new(0));
        let registry = counting_registry(&runs);
        let journal = Arc::new(MemoryJournal::new());
        let first = run_with_journal(python, FIRST, &registry, &journal).await;
        assert_ok(&first);
        assert_eq!(runs.load(Ordering::SeqCst), 2, "{python:?}");
        assert_eq!(journal.recorded().len(), 2, "{python:?}");

        let resumed = "a = await bump(n=1)\nb = await bump(n=2)\nc = await bump(n=3)\n[a, b, c]";
        let r = run_with_journal(python, resumed, &registry, &journal).await;
        assert_ok(&r);
        assert_eq!(r.output, json!([10, 20, 30]), "{python:?}");
        assert_eq!(runs.load(Ordering::SeqCst), 3, "{python:?}: only the third call ran");
        let replayed: Vec<bool> = r.call_trace.iter().map(|c| c.replayed).collect();
        assert_eq!(replayed, [true, true, false], "{python:?}");
        assert_eq!(journal.recorded().len(), 3, "{python:?}");
        let seqs: Vec<u32> = journal.recorded().iter().map(|e| e.seq).collect();
        assert_eq!(seqs, [1, 2, 3], "{python:?}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_chain_that_asks_for_another_call_than_its_journal_holds_ends_replay_diverged() {
    for python in [PythonChoice::Monty, PythonChoice::Cpython] {
        let runs = Arc::new(AtomicU32::new(0));
        let registry = counting_registry(&runs);
        let journal = Arc::new(MemoryJournal::new());
        assert_ok(&run_with_journal(python, FIRST, &registry, &journal).await);

        let diverged = "a = await bump(n=1)\nb = await bump(n=5)\n[a, b]";
        let r = run_with_journal(python, diverged, &registry, &journal).await;
        assert_eq!(r.status, ChainStatus::Error, "{python:?}: {r:#?}");
        let error = r.error.as_ref().expect("an error");
        assert_eq!(error.kind, ErrorKind::ReplayDiverged, "{python:?}: {r:#?}");
        assert!(error.message.contains("call #2"), "{}", error.message);
        assert_eq!(
            runs.load(Ordering::SeqCst),
            2,
            "{python:?}: the diverging call never ran"
        );
        assert_eq!(journal.recorded().len(), 2, "{python:?}: nothing new recorded");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failed_or_denied_call_is_replayed_as_it_ended() {
    for python in [PythonChoice::Monty, PythonChoice::Cpython] {
        let runs = Arc::new(AtomicU32::new(0));
        let registry = counting_registry(&runs);
        let journal = Arc::new(MemoryJournal::new());
        // `nope` is no tool: the call ends `error`, and the script goes on.
        let script = "try:\n    await nope()\nexcept Exception as e:\n    r = type(e).__name__\n[r, await bump(n=1)]";
        let first = run_with_journal(python, script, &registry, &journal).await;
        assert_ok(&first);
        let again = run_with_journal(python, script, &registry, &journal).await;
        assert_ok(&again);
        assert_eq!(again.output, first.output, "{python:?}");
        assert_eq!(runs.load(Ordering::SeqCst), 1, "{python:?}");
        let statuses: Vec<_> = again.call_trace.iter().map(|c| (c.status, c.replayed)).collect();
        let first_statuses: Vec<_> = first.call_trace.iter().map(|c| (c.status, true)).collect();
        assert_eq!(statuses, first_statuses, "{python:?}");
    }
}

/// A journal whose store fails every write.
struct FailingJournal;

#[async_trait::async_trait]
impl Journal for FailingJournal {
    fn recorded(&self) -> Vec<chainbox::journal::JournalEntry> {
        Vec::new()
    }

    async fn append(&self, entry: chainbox::journal::JournalEntry) -> Result<(), chainbox::journal::JournalError> {
        Err(chainbox::journal::JournalError {
            seq: entry.seq,
            why: "the disk is full".into(),
        })
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_call_the_journal_cannot_record_ends_the_chain_before_the_next_runs() {
    for python in [PythonChoice::Monty, PythonChoice::Cpython] {
        let runs = Arc::new(AtomicU32::new(0));
        let registry = counting_registry(&runs);
        let policy = ChainPolicy {
            python,
            ..ChainPolicy::default()
        };
        let options = RunOptions {
            journal: Some(Arc::new(FailingJournal) as Arc<dyn Journal>),
            ..RunOptions::default()
        };
        let r = engine()
            .run_with(FIRST, &registry, &policy, &Approval::auto(ToolRisk::Safe), options)
            .await;
        let error = r.error.as_ref().expect("an error");
        assert_eq!(
            (error.kind, error.error_type.as_str()),
            (ErrorKind::Crash, "JournalError"),
            "{python:?}: {r:#?}"
        );
        assert!(error.message.contains("call #1"), "{}", error.message);
        assert_eq!(runs.load(Ordering::SeqCst), 1, "{python:?}: the second call never ran");
    }
}
