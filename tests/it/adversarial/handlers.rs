//! Hostile host-side code: approval handlers that hang, fail, panic or
//! block their thread, and tools that panic or block theirs. None of it may
//! take the host down, approve a call by failing, or stop the next chain.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use chainbox::{
    Approval, ApprovalDecision, ApprovalHandler, ApprovalRequest, CallStatus, ChainPolicy, ChainStatus, ErrorKind,
    ToolRisk,
};
use serde_json::{Map, Value, json};

use crate::fixtures::{
    adversarial_registry_with, assert_ended, assert_next_chain_ok, assert_ok, assert_trace, risky_tool,
    run_adversarial, run_full, run_tight, tight,
};

/// How a hostile approval handler misbehaves.
#[derive(Clone, Copy)]
enum Misbehaviour {
    Hang,
    Fail,
    Panic,
    BlockThread,
    ModifyToGarbage,
}

struct Hostile(Misbehaviour);

#[async_trait]
impl ApprovalHandler for Hostile {
    async fn request(&self, _: &ApprovalRequest) -> Result<ApprovalDecision, chainbox::ApprovalError> {
        match self.0 {
            Misbehaviour::Hang => {
                std::future::pending::<()>().await;
                Ok(ApprovalDecision::Approved)
            }
            Misbehaviour::Fail => Err("approval service unreachable".into()),
            Misbehaviour::Panic => panic!("approval handler bug"),
            Misbehaviour::BlockThread => {
                std::thread::sleep(Duration::from_millis(1500));
                Ok(ApprovalDecision::Approved)
            }
            Misbehaviour::ModifyToGarbage => {
                let mut arguments = Map::new();
                arguments.insert("to".into(), json!({"$artifact": "sha256:not-a-ref"}));
                arguments.insert("unexpected".into(), json!(1));
                Ok(ApprovalDecision::Modified { arguments })
            }
        }
    }
}

/// Runs a chain that calls the high-risk `launch` tool twice, catching
/// whatever the script sees, with `handler` deciding. Returns the result and
/// how many launches happened.
async fn launch_with(misbehaviour: Misbehaviour) -> (chainbox::ChainRunResult, usize) {
    let launched = Arc::new(AtomicUsize::new(0));
    let counter = launched.clone();
    let launch = risky_tool("launch", ToolRisk::High, move |_| {
        counter.fetch_add(1, Ordering::SeqCst);
        Ok(json!("launched"))
    });
    let launch = Arc::new(StrictLaunch(launch));
    let policy = ChainPolicy {
        approval_timeout_s: 0.3,
        call_timeout_s: 1.0,
        ..tight()
    };
    let r = run_full(
        "out = []\nfor i in range(2):\n    try:\n        out.append(await launch(to='moon'))\n    except Exception as e:\n        out.append(type(e).__name__)\n[out, await noop()]",
        &adversarial_registry_with([launch as Arc<dyn chainbox::Tool>]),
        &policy,
        &Approval::new(Hostile(misbehaviour)),
    )
    .await;
    (r, launched.load(Ordering::SeqCst))
}

/// `launch(to)` with a strict schema, wrapping a counting tool.
struct StrictLaunch(Arc<dyn chainbox::Tool>);

#[async_trait]
impl chainbox::Tool for StrictLaunch {
    fn info(&self) -> &chainbox::ToolInfo {
        static INFO: std::sync::OnceLock<chainbox::ToolInfo> = std::sync::OnceLock::new();
        INFO.get_or_init(|| chainbox::ToolInfo::new("launch", "launches something irreversible", {
            json!({"type": "object", "properties": {"to": {"type": "string"}}, "required": ["to"], "additionalProperties": false})
        }).with_risk(ToolRisk::High))
    }
    async fn execute(
        &self,
        ctx: chainbox::ToolContext,
        args: Map<String, Value>,
    ) -> Result<chainbox::ToolOutput, chainbox::ToolError> {
        self.0.execute(ctx, args).await
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn hanging_approval_handler_means_denied_after_the_approval_timeout() {
    let started = Instant::now();
    let (r, launched) = launch_with(Misbehaviour::Hang).await;
    assert_ok(&r);
    assert_eq!(
        r.output,
        json!([["PermissionError", "PermissionError"], null]),
        "{r:#?}"
    );
    assert_trace(
        &r,
        &[
            ("launch", CallStatus::Denied),
            ("launch", CallStatus::Denied),
            ("noop", CallStatus::Ok),
        ],
    );
    assert_eq!(launched, 0);
    assert!(started.elapsed() < Duration::from_secs(2), "{:?}", started.elapsed());
    assert_next_chain_ok().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn failing_approval_handler_means_denied() {
    let (r, launched) = launch_with(Misbehaviour::Fail).await;
    assert_ok(&r);
    assert_eq!(
        r.output,
        json!([["PermissionError", "PermissionError"], null]),
        "{r:#?}"
    );
    assert_trace(
        &r,
        &[
            ("launch", CallStatus::Denied),
            ("launch", CallStatus::Denied),
            ("noop", CallStatus::Ok),
        ],
    );
    assert_eq!(launched, 0);
    assert_next_chain_ok().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn panicking_approval_handler_means_denied_and_the_host_survives() {
    let (r, launched) = launch_with(Misbehaviour::Panic).await;
    assert_ok(&r);
    assert_eq!(
        r.output,
        json!([["PermissionError", "PermissionError"], null]),
        "{r:#?}"
    );
    assert_trace(
        &r,
        &[
            ("launch", CallStatus::Denied),
            ("launch", CallStatus::Denied),
            ("noop", CallStatus::Ok),
        ],
    );
    assert_eq!(launched, 0);
    assert_next_chain_ok().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn approval_handler_blocking_its_thread_is_denied_and_never_approves_late() {
    // A handler that blocks its worker thread cannot be preempted: the
    // approval timeout fires once the runtime gets the thread back (tokio
    // cannot steal the chain's task from a blocked worker's LIFO slot), so
    // the bound is the block, not the timeout. What must hold is that the
    // late "approved" is never acted on.
    let started = Instant::now();
    let (r, launched) = launch_with(Misbehaviour::BlockThread).await;
    assert_ok(&r);
    assert_eq!(
        r.output,
        json!([["PermissionError", "PermissionError"], null]),
        "{r:#?}"
    );
    assert_trace(
        &r,
        &[
            ("launch", CallStatus::Denied),
            ("launch", CallStatus::Denied),
            ("noop", CallStatus::Ok),
        ],
    );
    assert_eq!(launched, 0, "a handler that timed out must not approve late");
    assert!(started.elapsed() < Duration::from_secs(4), "{:?}", started.elapsed());
    assert_next_chain_ok().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn approval_replacing_arguments_with_garbage_is_rejected_by_the_schema() {
    let (r, launched) = launch_with(Misbehaviour::ModifyToGarbage).await;
    assert_ok(&r);
    assert_eq!(r.output, json!([["ValueError", "ValueError"], null]), "{r:#?}");
    assert_trace(
        &r,
        &[
            ("launch", CallStatus::Error),
            ("launch", CallStatus::Error),
            ("noop", CallStatus::Ok),
        ],
    );
    assert_eq!(launched, 0);
    assert_next_chain_ok().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn panicking_tool_is_a_catchable_runtime_error_awaited_or_gathered() {
    let r = run_tight("import asyncio\nout = []\ntry:\n    await explode()\nexcept RuntimeError as e:\n    out.append(str(e))\ntry:\n    await asyncio.gather(*[explode() for i in range(5)])\nexcept RuntimeError as e:\n    out.append(str(e))\n[out, await noop()]").await;
    assert_ok(&r);
    assert!(
        r.output[0][0].as_str().unwrap_or_default().contains("panicked"),
        "{r:#?}"
    );
    assert!(
        r.output[0][1].as_str().unwrap_or_default().contains("panicked"),
        "{r:#?}"
    );
    assert_eq!(r.call_trace.len(), 7, "{r:#?}");
    assert!(
        r.call_trace[..6]
            .iter()
            .all(|c| c.tool == "explode" && c.status == CallStatus::Error),
        "{r:#?}"
    );
    assert_eq!(r.call_trace[6].status, CallStatus::Ok);
    assert_next_chain_ok().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn uncaught_tool_panic_ends_the_chain_as_a_script_error() {
    let r = run_tight("await noop()\nawait explode()").await;
    assert_ended(&r, ChainStatus::Error, ErrorKind::Script);
    assert_eq!(r.error.as_ref().map(|e| e.error_type.as_str()), Some("RuntimeError"));
    assert_trace(&r, &[("noop", CallStatus::Ok), ("explode", CallStatus::Error)]);
    assert_next_chain_ok().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn tool_blocking_its_thread_is_recorded_and_the_total_timeout_still_ends_the_chain() {
    // A tool that blocks its thread cannot be preempted: the chain ends at
    // the first await point after it returns, by the total timeout.
    let policy = ChainPolicy {
        call_timeout_s: 0.2,
        approval_timeout_s: 0.1,
        total_timeout_s: 0.5,
        ..tight()
    };
    let started = Instant::now();
    let r = run_adversarial("await noop()\nawait block(seconds=1.0)\nwhile True:\n    pass", &policy).await;
    assert!(
        started.elapsed() < Duration::from_millis(2500),
        "{:?}",
        started.elapsed()
    );
    // Past the total deadline by the time the tool lets go, the chain ends
    // either by the total timeout or, if the script runs first, by the
    // uncaught TimeoutError of the late call: both are timeouts to the model.
    let timed_out = r.status == ChainStatus::Timeout && r.error_kind() == Some(ErrorKind::Timeout);
    let raised =
        r.error_kind() == Some(ErrorKind::Script) && r.error.as_ref().is_some_and(|e| e.error_type == "TimeoutError");
    assert!(timed_out || raised, "{r:#?}");
    assert_eq!(r.call_trace.len(), 2, "{r:#?}");
    assert_eq!(r.call_trace[0].status, CallStatus::Ok);
    assert_eq!(r.call_trace[1].tool, "block");
    // The blocked call returned after 1 s against a 0.2 s call timeout: the
    // invoker could not preempt it, but it does not hand the late result on.
    assert_eq!(r.call_trace[1].status, CallStatus::Timeout, "{r:#?}");
    assert_next_chain_ok().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn tool_blocking_its_thread_does_not_stall_other_chains() {
    let policy = ChainPolicy {
        call_timeout_s: 5.0,
        total_timeout_s: 5.0,
        ..tight()
    };
    let blocked = tokio::spawn(async move { run_adversarial("await block(seconds=1.5)", &policy).await });
    tokio::time::sleep(Duration::from_millis(100)).await;
    let started = Instant::now();
    for _ in 0..5 {
        assert_next_chain_ok().await;
    }
    assert!(
        started.elapsed() < Duration::from_millis(1200),
        "other chains waited for the blocked thread: {:?}",
        started.elapsed()
    );
    let r = blocked.await.expect("join");
    assert_ok(&r);
    assert_trace(&r, &[("block", CallStatus::Ok)]);
}

/// `query(sql)` whose per-call risk rating indexes `args["sql"]`: it panics
/// on a call without `sql`, before `execute` ever runs.
struct PanickyClassifier;

#[async_trait]
impl chainbox::Tool for PanickyClassifier {
    fn info(&self) -> &chainbox::ToolInfo {
        static INFO: std::sync::OnceLock<chainbox::ToolInfo> = std::sync::OnceLock::new();
        INFO.get_or_init(|| chainbox::ToolInfo::new("query", "runs SQL", json!({"type": "object"})))
    }
    fn classify(&self, args: &Map<String, Value>) -> ToolRisk {
        if args["sql"].as_str().unwrap_or_default().starts_with("DELETE") {
            ToolRisk::Critical
        } else {
            ToolRisk::Safe
        }
    }
    async fn execute(
        &self,
        _: chainbox::ToolContext,
        _: Map<String, Value>,
    ) -> Result<chainbox::ToolOutput, chainbox::ToolError> {
        Ok(chainbox::ToolOutput::Value(json!("rows")))
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn tool_panicking_while_rating_a_calls_risk_is_a_runtime_error_not_a_host_panic() {
    // The panic unwound out of `Engine::run` into the caller's task (fixed
    // in the invoker: `classify` runs under a panic guard, failing closed).
    let registry = adversarial_registry_with([Arc::new(PanickyClassifier) as Arc<dyn chainbox::Tool>]);
    let chain = tokio::spawn(async move {
        run_full(
            "import asyncio\nout = []\ntry:\n    await query(table='users')\nexcept RuntimeError:\n    out.append('refused')\ntry:\n    await asyncio.gather(query(table='a'), query(sql='SELECT 1'))\nexcept RuntimeError:\n    out.append('refused')\n[out, await query(sql='SELECT 1')]",
            &registry,
            &tight(),
            &Approval::auto(ToolRisk::Safe),
        )
        .await
    });
    let r = chain.await.expect("Engine::run panicked");
    assert_ok(&r);
    assert_eq!(r.output, json!([["refused", "refused"], "rows"]), "{r:#?}");
    assert_eq!(r.call_trace.len(), 4, "{r:#?}");
    assert_eq!(r.call_trace[0].status, CallStatus::Error);
    assert!(
        r.call_trace[0].error.as_deref().is_some_and(|e| e.contains("panicked")),
        "{r:#?}"
    );
    assert_eq!(r.call_trace[3].status, CallStatus::Ok);
    assert_next_chain_ok().await;
}
