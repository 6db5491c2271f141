//! What durability costs: the same chain of 20 calls of a no-op tool run
//! plainly (`plain`) and as a durable chain on each store (`memory`,
//! `sqlite`, and `postgres` when `CHAINBOX_BENCH_POSTGRES` names a server's
//! URL): one row for the chain, its claim, one journal write per call and
//! its result. The journal's cost per call is `(store - plain) / 20`.
//! `gathered_*` runs the same 20 calls in one `asyncio.gather` (against
//! `plain_gathered`): they finish together, and their entries are written
//! in as few transactions as the store's write latency allows (group
//! commit), each still durable before its result reaches the script.
//! `resume_*` times a resume of a chain suspended after its 20 calls: the
//! script re-runs, its 20 calls answered from the journal, to its approved
//! 21st call and its end (the suspension, decision and store setup are not
//! timed).

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use chainbox::approval::ApprovalDecision;
use chainbox::durable::Durable;
use chainbox::store::{self, ChainStore};
use chainbox::{
    Approval, ChainPolicy, ChainStatus, Engine, Tool, ToolContext, ToolError, ToolInfo, ToolOutput, ToolRegistry,
    ToolRisk,
};
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Map, Value, json};

/// Calls before the critical one.
const CALLS: usize = 20;
const CHAIN: &str = "for i in range(20):\n    await noop(i=i)\n'done'";
/// The same 20 calls gathered: they finish together, and their journal
/// entries are written together (group commit).
const GATHERED: &str = "import asyncio\nawait asyncio.gather(*[noop(i=i) for i in range(20)])\n'done'";
const SUSPENDING: &str = "for i in range(20):\n    await noop(i=i)\nawait approve_me()\n'done'";

struct Noop(ToolInfo);

#[async_trait]
impl Tool for Noop {
    fn info(&self) -> &ToolInfo {
        &self.0
    }
    async fn execute(&self, _ctx: ToolContext, _args: Map<String, Value>) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::Value(Value::Null))
    }
}

fn registry() -> ToolRegistry {
    let schema = json!({"type": "object"});
    ToolRegistry::from_local([
        Arc::new(Noop(ToolInfo::new("noop", "Does nothing.", schema.clone()))) as Arc<dyn Tool>,
        Arc::new(Noop(
            ToolInfo::new("approve_me", "Does nothing, once approved.", schema).with_risk(ToolRisk::Critical),
        )),
    ])
    .expect("registry")
}

fn benches(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let engine = Engine::new().expect("engine");
    let registry = registry();
    let policy = ChainPolicy::default();
    let approval = Approval::defer();
    let dir = tempfile::tempdir().expect("tempdir");
    let mut stores = vec![
        ("memory", "memory:".to_owned()),
        ("sqlite", format!("sqlite:{}", dir.path().join("bench.db").display())),
    ];
    match std::env::var("CHAINBOX_BENCH_POSTGRES") {
        Ok(url) => stores.push(("postgres", url)),
        Err(_) => eprintln!("durable: set CHAINBOX_BENCH_POSTGRES=postgres://... to measure PostgreSQL too"),
    }

    let plain = runtime.block_on(engine.run(CHAIN, &registry, &policy, &approval));
    assert!(plain.is_ok(), "{plain:?}");
    let mut group = c.benchmark_group(format!("durable_{CALLS}_calls"));
    group.bench_function("plain", |b| {
        b.to_async(&runtime)
            .iter(|| engine.run(CHAIN, &registry, &policy, &approval))
    });
    group.bench_function("plain_gathered", |b| {
        b.to_async(&runtime)
            .iter(|| engine.run(GATHERED, &registry, &policy, &approval))
    });
    for (name, url) in &stores {
        let store: Arc<dyn ChainStore> = runtime.block_on(store::connect(url)).expect("store");
        let durable = Durable::new(engine.clone(), store);
        let r = runtime
            .block_on(durable.run(CHAIN, &registry, &policy, &approval))
            .expect("durable run");
        assert!(r.is_ok(), "{r:?}");
        group.bench_function(*name, |b| {
            b.to_async(&runtime)
                .iter(|| durable.run(CHAIN, &registry, &policy, &approval))
        });
        group.bench_function(format!("gathered_{name}"), |b| {
            b.to_async(&runtime).iter(|| async {
                let r = durable.run(GATHERED, &registry, &policy, &approval).await;
                assert!(r.as_ref().is_ok_and(|r| r.is_ok() && r.tool_calls == 20), "{r:?}");
            })
        });
        group.bench_function(format!("resume_{name}"), |b| {
            b.iter_custom(|iters| {
                let mut spent = Duration::ZERO;
                for _ in 0..iters {
                    let chain_id = runtime.block_on(async {
                        let r = durable
                            .run(SUSPENDING, &registry, &policy, &approval)
                            .await
                            .expect("run");
                        assert_eq!(r.status, ChainStatus::Suspended, "{r:?}");
                        let chain_id = r.chain_id.expect("chain id");
                        durable
                            .decide(&chain_id, ApprovalDecision::Approved, "bench")
                            .await
                            .expect("decide");
                        chain_id
                    });
                    let start = Instant::now();
                    let r = runtime
                        .block_on(durable.resume(&chain_id, &registry, &approval))
                        .expect("resume");
                    spent += start.elapsed();
                    assert!(r.is_ok(), "{r:?}");
                }
                spent
            })
        });
    }
    group.finish();
}

criterion_group!(durable, benches);
criterion_main!(durable);
