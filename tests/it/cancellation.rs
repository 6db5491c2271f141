//! Cancelling a chain from the library: `RunOptions::cancel` ends it as
//! `error` of kind `cancelled` with the trace so far, the call in flight cut
//! off (its command tool killed) and no call after it run, on both guests.

use std::time::{Duration, Instant};

use chainbox::result::CANCELLED_CALL;
use chainbox::{Approval, CallStatus, ChainPolicy, ChainStatus, ErrorKind, PythonChoice, RunOptions, ToolRegistry};
use tokio_util::sync::CancellationToken;

use crate::fixtures::{assert_ended, assert_next_chain_ok, assert_trace, engine, noop_tool, sh_tool};

/// Whether process `pid` is running (a zombie is not).
fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| stat.rsplit_once(')').map(|(_, rest)| rest.trim_start().to_owned()))
        .is_some_and(|rest| !rest.starts_with('Z') && !rest.starts_with('X'))
}

/// Runs `await sleeper()` (a command tool that writes its pid, then sleeps
/// 60 s) then `await noop()` on `python`, cancels the chain once the tool
/// runs, and checks the ending, the trace and the tool's death.
async fn a_chain_cancelled_while_its_tool_runs(python: PythonChoice) {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let pid_file = dir.path().join("sleeper.pid");
    let sleeper = sh_tool("sleeper", &format!("echo $$ > '{}'; exec sleep 60", pid_file.display()));
    let registry = ToolRegistry::from_local([sleeper, noop_tool()]).expect("registry");
    let policy = ChainPolicy {
        python,
        ..ChainPolicy::default()
    };
    let cancel = CancellationToken::new();
    let options = RunOptions {
        cancel: Some(cancel.clone()),
        ..RunOptions::default()
    };
    let approval = Approval::deny_all();
    let started = Instant::now();
    let run = engine().run_with(
        "await sleeper()\nawait noop()\n'done'",
        &registry,
        &policy,
        &approval,
        options,
    );
    let canceller = async {
        let pid = loop {
            if let Some(pid) = std::fs::read_to_string(&pid_file)
                .ok()
                .and_then(|s| s.trim().parse::<i32>().ok())
            {
                break pid;
            }
            assert!(started.elapsed() < Duration::from_secs(60), "the tool never started");
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        cancel.cancel();
        pid
    };
    let (r, pid) = tokio::join!(run, canceller);
    assert_ended(&r, ChainStatus::Error, ErrorKind::Cancelled);
    assert_eq!(r.error.as_ref().map(|e| e.error_type.as_str()), Some("Cancelled"));
    assert_trace(&r, &[("sleeper", CallStatus::Error)]);
    assert_eq!(r.call_trace[0].error.as_deref(), Some(CANCELLED_CALL));
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "the cancelled chain ran on for {:?}",
        started.elapsed()
    );
    let deadline = Instant::now() + Duration::from_secs(15);
    while alive(pid) {
        assert!(Instant::now() < deadline, "the cut-off tool (pid {pid}) still runs");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_next_chain_ok().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_monty_chain_cancelled_while_its_tool_runs_ends_cancelled_with_its_trace() {
    a_chain_cancelled_while_its_tool_runs(PythonChoice::Monty).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cpython_chain_cancelled_while_its_tool_runs_ends_cancelled_with_its_trace() {
    a_chain_cancelled_while_its_tool_runs(PythonChoice::Cpython).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_chain_cancelled_before_it_starts_runs_nothing() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let marker = dir.path().join("ran");
    let tool = sh_tool("touch_it", &format!("touch '{}'", marker.display()));
    let registry = ToolRegistry::from_local([tool]).expect("registry");
    let cancel = CancellationToken::new();
    cancel.cancel();
    let options = RunOptions {
        cancel: Some(cancel),
        ..RunOptions::default()
    };
    let r = engine()
        .run_with(
            "await touch_it()",
            &registry,
            &ChainPolicy::default(),
            &Approval::deny_all(),
            options,
        )
        .await;
    assert_ended(&r, ChainStatus::Error, ErrorKind::Cancelled);
    assert_trace(&r, &[]);
    assert!(!marker.exists(), "the tool of a chain cancelled before it started ran");
}
