//! Cancellation: the caller drops a chain's future mid-CPU, mid-call,
//! mid-gather, mid-approval, mid-subprocess and mid-sleep (a
//! `tokio::time::timeout` or `select!` around `Engine::run`). The drop must
//! be prompt, stop the chain's side effects, free its slot, and leave the
//! engine serving the next chain.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use chainbox::{Approval, CallStatus, ChainPolicy, Engine, EngineConfig, PythonChoice, ToolRisk};
use serde_json::json;

use crate::fixtures::{
    Silent, Ticker, adversarial_registry, adversarial_registry_with, assert_next_chain_ok, assert_ok, assert_trace,
    engine, risky_tool, sh_tool, tight,
};

/// Drops `script`'s chain after `after`; says whether it was still running.
async fn run_and_drop(script: &str, registry: &chainbox::ToolRegistry, approval: &Approval, after: Duration) -> bool {
    let policy = ChainPolicy {
        total_timeout_s: 30.0,
        max_cpu_s: 30.0,
        call_timeout_s: 30.0,
        approval_timeout_s: 20.0,
        ..tight()
    };
    let started = Instant::now();
    let dropped = tokio::time::timeout(after, engine().run(script, registry, &policy, approval))
        .await
        .is_err();
    assert!(
        started.elapsed() < after + Duration::from_millis(500),
        "the chain took {:?} to let go",
        started.elapsed()
    );
    dropped
}

/// Ticks of a [`Ticker`] stay put once its chain is dropped.
async fn assert_ticks_stop(ticks: &AtomicUsize) {
    tokio::time::sleep(Duration::from_millis(50)).await;
    let at_drop = ticks.load(Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        ticks.load(Ordering::SeqCst),
        at_drop,
        "the tool kept running after its chain was dropped"
    );
}

fn ticker() -> (Arc<dyn chainbox::Tool>, Arc<AtomicUsize>) {
    let ticks = Arc::new(AtomicUsize::new(0));
    (Arc::new(Ticker { ticks: ticks.clone() }), ticks)
}

#[tokio::test(flavor = "multi_thread")]
async fn dropping_a_chain_mid_cpu_lets_go_promptly() {
    let dropped = run_and_drop(
        "await noop()\nwhile True:\n    pass",
        &adversarial_registry(),
        &Approval::auto(ToolRisk::Safe),
        Duration::from_millis(200),
    )
    .await;
    assert!(dropped);
    assert_next_chain_ok().await;
}

/// A CPython guest runs on a thread of its own, which dropping its chain
/// cannot unwind: the drop stops the guest instead. On an engine with one
/// chain slot, the next chain gets the slot at once.
#[tokio::test(flavor = "multi_thread")]
async fn dropping_a_cpython_chain_mid_cpu_stops_its_guest() {
    let engine = Engine::with_config(EngineConfig {
        max_concurrent_chains: 1,
        ..EngineConfig::default()
    })
    .expect("engine");
    engine.prepare_cpython().await.expect("the CPython guest");
    let policy = ChainPolicy {
        python: PythonChoice::Cpython,
        total_timeout_s: 30.0,
        max_cpu_s: 30.0,
        ..tight()
    };
    let (registry, approval) = (adversarial_registry(), Approval::auto(ToolRisk::Safe));
    let spinning = engine.run("await noop()\nwhile True:\n    pass", &registry, &policy, &approval);
    let dropped = tokio::time::timeout(Duration::from_millis(300), spinning)
        .await
        .is_err();
    assert!(dropped);
    let started = Instant::now();
    let r = engine.run("1 + 1", &registry, &policy, &approval).await;
    assert_ok(&r);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "the next chain waited {:?} for the slot",
        started.elapsed()
    );
}

/// The same for a CPython guest parked in a tool call: the tool stops.
#[tokio::test(flavor = "multi_thread")]
async fn dropping_a_cpython_chain_mid_call_stops_the_tool() {
    let (tool, ticks) = ticker();
    let policy = ChainPolicy {
        python: PythonChoice::Cpython,
        total_timeout_s: 30.0,
        call_timeout_s: 30.0,
        approval_timeout_s: 20.0,
        ..tight()
    };
    let (registry, approval) = (adversarial_registry_with([tool]), Approval::auto(ToolRisk::Safe));
    let chain = engine().run("await ticker(seconds=30)", &registry, &policy, &approval);
    let dropped = tokio::time::timeout(Duration::from_millis(1500), chain).await.is_err();
    assert!(dropped);
    assert!(ticks.load(Ordering::SeqCst) > 0, "the tool never ran");
    assert_ticks_stop(&ticks).await;
    assert_next_chain_ok().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn dropping_a_chain_mid_call_stops_the_tool() {
    let (tool, ticks) = ticker();
    let dropped = run_and_drop(
        "await ticker(seconds=30)",
        &adversarial_registry_with([tool]),
        &Approval::auto(ToolRisk::Safe),
        Duration::from_millis(200),
    )
    .await;
    assert!(dropped);
    assert!(ticks.load(Ordering::SeqCst) > 0, "the tool never ran");
    assert_ticks_stop(&ticks).await;
    assert_next_chain_ok().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn dropping_a_chain_mid_gather_stops_every_gathered_tool() {
    let (tool, ticks) = ticker();
    let dropped = run_and_drop(
        "import asyncio\nawait asyncio.gather(*[ticker(seconds=30) for i in range(8)])",
        &adversarial_registry_with([tool]),
        &Approval::auto(ToolRisk::Safe),
        Duration::from_millis(200),
    )
    .await;
    assert!(dropped);
    assert!(ticks.load(Ordering::SeqCst) >= 8, "the tools never ran");
    assert_ticks_stop(&ticks).await;
    assert_next_chain_ok().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn dropping_a_chain_mid_approval_abandons_the_approval_and_the_call() {
    let silent = Silent::default();
    let launched = Arc::new(AtomicUsize::new(0));
    let counter = launched.clone();
    let launch = risky_tool("launch", ToolRisk::Critical, move |_| {
        counter.fetch_add(1, Ordering::SeqCst);
        Ok(json!("launched"))
    });
    let approval = Approval::new(silent.clone());
    let dropped = run_and_drop(
        "await launch()",
        &adversarial_registry_with([launch]),
        &approval,
        Duration::from_millis(200),
    )
    .await;
    assert!(dropped);
    assert!(silent.asked() > 0, "the approval was never requested");
    let started = Instant::now();
    while silent.dropped() == 0 {
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "the approval outlived its chain"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(launched.load(Ordering::SeqCst), 0);
    assert_next_chain_ok().await;
}

#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread")]
async fn dropping_a_chain_mid_subprocess_kills_the_process() {
    let dir = tempfile::tempdir().expect("temp dir");
    let pid_file = dir.path().join("pid");
    let script = format!(
        "echo $$ > '{0}.tmp' && mv '{0}.tmp' '{0}' && exec sleep 30",
        pid_file.display()
    );
    let dropped = run_and_drop(
        "await hang()",
        &adversarial_registry_with([sh_tool("hang", &script)]),
        &Approval::auto(ToolRisk::Safe),
        Duration::from_millis(400),
    )
    .await;
    assert!(dropped);
    let pid: u32 = std::fs::read_to_string(&pid_file)
        .expect("the tool started")
        .trim()
        .parse()
        .expect("a pid");
    super::tool_results::assert_process_gone(pid).await;
    assert_next_chain_ok().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn dropping_a_chain_mid_sleep_lets_go_promptly() {
    let dropped = run_and_drop(
        "import time\ntime.sleep(60)",
        &adversarial_registry(),
        &Approval::auto(ToolRisk::Safe),
        Duration::from_millis(100),
    )
    .await;
    assert!(dropped);
    assert_next_chain_ok().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn select_between_two_chains_keeps_the_winner_and_stops_the_loser() {
    let (tool, ticks) = ticker();
    let registry = adversarial_registry_with([tool]);
    let policy = tight();
    let approval = Approval::auto(ToolRisk::Safe);
    let r = tokio::select! {
        r = engine().run("await ticker(seconds=30)", &registry, &policy, &approval) => r,
        r = engine().run("await sleep(seconds=0.1)\n'fast'", &registry, &policy, &approval) => r,
    };
    assert_ok(&r);
    assert_eq!(r.output, json!("fast"), "{r:#?}");
    assert_trace(&r, &[("sleep", CallStatus::Ok)]);
    assert_ticks_stop(&ticks).await;
    assert_next_chain_ok().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn cancelled_chains_give_back_their_slot() {
    // A one-slot engine: a leaked slot would make the last chain wait forever.
    let engine = Engine::with_config(EngineConfig {
        max_concurrent_chains: 1,
        ..EngineConfig::default()
    })
    .expect("engine");
    let registry = adversarial_registry();
    let policy = tight();
    let approval = Approval::auto(ToolRisk::Safe);
    for script in [
        "while True:\n    pass",
        "await sleep(seconds=30)",
        "import time\ntime.sleep(30)",
    ] {
        for _ in 0..5 {
            let run = engine.run(script, &registry, &policy, &approval);
            assert!(tokio::time::timeout(Duration::from_millis(30), run).await.is_err());
        }
    }
    let r = tokio::time::timeout(
        Duration::from_secs(5),
        engine.run("await add(a=1, b=2)", &registry, &policy, &approval),
    )
    .await
    .expect("the slot was given back");
    assert_ok(&r);
    assert_eq!(r.output, json!(3.0));
    assert_next_chain_ok().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn cancelled_chains_do_not_pin_their_artifacts_forever() {
    let store: Arc<dyn chainbox::ArtifactStore> = Arc::new(chainbox::MemoryArtifactStore::new());
    let engine = Engine::with_config(EngineConfig {
        artifacts: Some(store.clone()),
        max_concurrent_chains: 2,
        ..EngineConfig::default()
    })
    .expect("engine");
    let registry = adversarial_registry();
    let policy = tight();
    let approval = Approval::auto(ToolRisk::Safe);
    let run = engine.run(
        "h = await big(n=100000)\nawait sleep(seconds=30)",
        &registry,
        &policy,
        &approval,
    );
    assert!(tokio::time::timeout(Duration::from_millis(300), run).await.is_err());
    // The chain is gone: nothing holds its offloaded result any more.
    let started = Instant::now();
    while store.gc().expect("gc") == 0 {
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "the cancelled chain's artifact stayed pinned"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_next_chain_ok().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_call_never_awaited_never_runs_and_is_warned_about() {
    // As in CPython, calling a tool only creates a coroutine: without an
    // `await` the tool never starts, has no record, and the result warns.
    let (tool, ticks) = ticker();
    let r = crate::fixtures::run_full(
        "t = ticker(seconds=30)\nawait sleep(seconds=0.1)\n'done'",
        &adversarial_registry_with([tool]),
        &tight(),
        &Approval::auto(ToolRisk::Safe),
    )
    .await;
    assert_ok(&r);
    assert_eq!(r.output, json!("done"));
    assert_trace(&r, &[("sleep", CallStatus::Ok)]);
    assert_eq!(ticks.load(Ordering::SeqCst), 0, "the unawaited call ran");
    assert_eq!(
        r.warnings,
        vec![chainbox::ChainWarning {
            message: "coroutine 'ticker' was never awaited".into(),
            line: Some(1),
        }]
    );
    assert_next_chain_ok().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_gathered_call_still_running_when_the_script_ends_is_cut_off_and_recorded_as_interrupted() {
    // One gathered call fails at once; the script catches the error and
    // ends while the other is still running: that call stops with the chain.
    let (tool, ticks) = ticker();
    let script = "import asyncio\ntry:\n    await asyncio.gather(ticker(seconds=30), explode())\nexcept RuntimeError:\n    pass\n'done'";
    let r = crate::fixtures::run_full(
        script,
        &adversarial_registry_with([tool]),
        &tight(),
        &Approval::auto(ToolRisk::Safe),
    )
    .await;
    assert_ok(&r);
    assert_eq!(r.output, json!("done"));
    assert_trace(&r, &[("ticker", CallStatus::Error), ("explode", CallStatus::Error)]);
    assert!(
        r.call_trace[0]
            .error
            .as_deref()
            .is_some_and(|e| e.contains("interrupted")),
        "{r:#?}"
    );
    assert!(ticks.load(Ordering::SeqCst) > 0, "the gathered call never started");
    assert_ticks_stop(&ticks).await;
    assert_next_chain_ok().await;
}
