//! An engine sized below `max_concurrent_chains` by the process's budgets
//! (here: a thread budget of three, which only CPython chains draw on, so
//! the CPython guest gets slots for two chains): a chain beyond that waits
//! for a slot and runs once one is free; one still waiting at its total
//! timeout ends with kind `timeout`, as any chain past it does.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use chainbox::engine::Budgets;
use chainbox::{
    Approval, ChainPolicy, ChainRunResult, ChainStatus, Engine, EngineConfig, ErrorKind, PythonChoice, Tool,
    ToolContext, ToolError, ToolInfo, ToolOutput, ToolRegistry, ToolRisk,
};
use serde_json::{Map, Value, json};
use tokio::sync::Notify;

/// `gate()`: waits until the test opens it, counting the calls that
/// reached it; once open, answers at once.
struct Gate {
    info: ToolInfo,
    arrived: AtomicUsize,
    open: AtomicBool,
    opened: Notify,
}

#[async_trait]
impl Tool for Gate {
    fn info(&self) -> &ToolInfo {
        &self.info
    }
    async fn execute(&self, _ctx: ToolContext, _args: Map<String, Value>) -> Result<ToolOutput, ToolError> {
        let opened = self.opened.notified();
        tokio::pin!(opened);
        opened.as_mut().enable();
        self.arrived.fetch_add(1, Ordering::SeqCst);
        if !self.open.load(Ordering::SeqCst) {
            opened.await;
        }
        Ok(ToolOutput::Value(json!("through")))
    }
}

impl Gate {
    fn new() -> Arc<Self> {
        Arc::new(Gate {
            info: ToolInfo::new("gate", "Waits until the test opens it.", json!({"type": "object"})),
            arrived: AtomicUsize::new(0),
            open: AtomicBool::new(false),
            opened: Notify::new(),
        })
    }

    fn open(&self) {
        self.open.store(true, Ordering::SeqCst);
        self.opened.notify_waiters();
    }

    /// Waits until `n` calls have reached the gate.
    async fn reached_by(&self, n: usize) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        while self.arrived.load(Ordering::SeqCst) < n {
            assert!(
                tokio::time::Instant::now() < deadline,
                "{n} chains never reached the gate"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

/// An engine of eight chain slots whose CPython guest the budgets hold
/// fewer of (three threads left: two chains, with the headroom), its
/// CPython guest built; and how many CPython chains it holds.
async fn small_engine() -> (Engine, usize) {
    let engine = Engine::with_config(EngineConfig {
        max_concurrent_chains: 8,
        max_warm_sessions: 0,
        budgets: Some(Budgets {
            threads: Some(3),
            ..Budgets::of_process()
        }),
        ..EngineConfig::default()
    })
    .expect("an engine");
    engine.prepare_cpython().await.expect("the CPython guest");
    let capacity = engine.capacity().cpython as usize;
    assert!((1..8).contains(&capacity), "sized at {capacity}");
    (engine, capacity)
}

fn policy(total_timeout_s: f64) -> ChainPolicy {
    ChainPolicy {
        python: PythonChoice::Cpython,
        total_timeout_s,
        ..ChainPolicy::default()
    }
}

/// Starts a chain of `script` on `engine` with `gate`.
fn start(
    engine: &Engine,
    gate: &Arc<Gate>,
    script: &'static str,
    policy: ChainPolicy,
) -> tokio::task::JoinHandle<ChainRunResult> {
    let engine = engine.clone();
    let registry = ToolRegistry::from_local([gate.clone() as Arc<dyn Tool>]).expect("registry");
    tokio::spawn(async move {
        let approval = Approval::auto(ToolRisk::Safe);
        engine.run(script, &registry, &policy, &approval).await
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chain_beyond_its_guests_sized_capacity_waits_for_a_slot_then_runs() {
    let (engine, capacity) = small_engine().await;
    let gate = Gate::new();
    let holding: Vec<_> = (0..capacity)
        .map(|_| start(&engine, &gate, "await gate()", policy(60.0)))
        .collect();
    gate.reached_by(capacity).await;
    let beyond = start(&engine, &gate, "r = await gate()\nf'{r} after waiting'", policy(60.0));
    // It waits: no slot, so it does not run, while the others hold theirs.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(gate.arrived.load(Ordering::SeqCst), capacity);
    assert!(!beyond.is_finished());
    gate.open();
    for chain in holding {
        let r = chain.await.expect("a holding chain");
        assert!(r.is_ok(), "{r:?}");
    }
    let r = beyond.await.expect("the chain beyond");
    assert!(r.is_ok(), "{r:?}");
    assert_eq!(r.output, json!("through after waiting"));
    assert_eq!(r.tool_calls, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chain_still_waiting_for_a_slot_at_its_total_timeout_ends_with_kind_timeout() {
    let (engine, capacity) = small_engine().await;
    let gate = Gate::new();
    let holding: Vec<_> = (0..capacity)
        .map(|_| start(&engine, &gate, "await gate()", policy(60.0)))
        .collect();
    gate.reached_by(capacity).await;
    let r = start(&engine, &gate, "await gate()", policy(1.0))
        .await
        .expect("the chain beyond");
    assert_eq!(r.status, ChainStatus::Timeout, "{r:?}");
    let error = r.error.as_ref().expect("an error");
    assert_eq!(error.kind, ErrorKind::Timeout);
    assert_eq!(error.error_type, "TimeoutError");
    assert!(error.message.contains("total_timeout_s = 1"), "{}", error.message);
    // Its trace: nothing ran, so no call.
    assert!(r.call_trace.is_empty(), "{:?}", r.call_trace);
    assert_eq!(r.tool_calls, 0);
    assert_eq!(gate.arrived.load(Ordering::SeqCst), capacity);
    // The chains holding the slots are none the worse for it.
    gate.open();
    for chain in holding {
        let r = chain.await.expect("a holding chain");
        assert!(r.is_ok(), "{r:?}");
    }
}
