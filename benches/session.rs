//! What a session's cell costs: `rebuild_<n>_cells_<store>` times one cell of
//! a session that has run `n` (1 or 50) cells of one call each
//! (`v_k = await noop(i=k)`),
//! on a fresh process's view of it: the session read from the store, its
//! 50 cells replayed on a fresh instance (their calls answered from the
//! journal), the new cell run, the session written back. `chain` is a
//! fresh chain's start and end (`1`), the baseline; `chain_call` a fresh
//! chain of what a warm cell runs (a call and a name), not durable. Stores: `memory`,
//! `sqlite`, and `postgres` when `CHAINBOX_BENCH_POSTGRES` names a
//! server's URL. Each measured session is a copy of one built once (its
//! copy is not timed), so every measurement rebuilds exactly `n` cells.
//! `warm_cell_<store>` times a cell on the engine that ran the session's
//! previous cell, which continues the instance it parked (the warm path:
//! nothing replays); sessions of up to [`WARM_CELLS`] cells, each cell a
//! call and a name. `--python` is the policy's: monty, then CPython
//! (`_cpython`).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use chainbox::durable::{Durable, NEW_SESSION};
use chainbox::store::{self, ChainStore, StoredChain, StoredSession};
use chainbox::{
    Approval, ChainPolicy, Engine, PythonChoice, Tool, ToolContext, ToolError, ToolInfo, ToolOutput, ToolRegistry,
};
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Map, Value, json};

/// Cells of the sessions the measurements rebuild.
const CELLS: [usize; 2] = [1, 50];

/// Cells a session of the warm measurement runs before a new one starts
/// (untimed), so a measured cell is the 2nd to the 20th of its session.
const WARM_CELLS: usize = 20;

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

/// A copy of session `from` under a new id: its chain, journal and cells.
async fn copy(store: &Arc<dyn ChainStore>, from: &str, n: usize) -> String {
    let id = format!("{from}_{n}");
    let chain = store.chain(from).await.expect("read").expect("the template");
    let session = store.session(from).await.expect("read").expect("the template");
    store
        .create_session(
            &StoredChain {
                chain_id: id.clone(),
                ..chain
            },
            &StoredSession {
                session_id: id.clone(),
                ..session.clone()
            },
        )
        .await
        .expect("create");
    for entry in store.journal(from).await.expect("read") {
        store.append(&id, &entry).await.expect("append");
    }
    store
        .update_session(&StoredSession {
            session_id: id.clone(),
            ..session
        })
        .await
        .expect("update");
    id
}

fn benches(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let engine = Engine::new().expect("engine");
    let registry =
        ToolRegistry::from_local([
            Arc::new(Noop(ToolInfo::new("noop", "Does nothing.", json!({"type": "object"})))) as Arc<dyn Tool>,
        ])
        .expect("registry");
    let approval = Approval::deny_all();
    let dir = tempfile::tempdir().expect("tempdir");
    let mut stores = vec![
        ("memory", "memory:".to_owned()),
        ("sqlite", format!("sqlite:{}", dir.path().join("bench.db").display())),
    ];
    match std::env::var("CHAINBOX_BENCH_POSTGRES") {
        Ok(url) => stores.push(("postgres", url)),
        Err(_) => eprintln!("session: set CHAINBOX_BENCH_POSTGRES=postgres://... to measure PostgreSQL too"),
    }
    let copies = AtomicUsize::new(0);
    for (python, suffix) in [(PythonChoice::Monty, ""), (PythonChoice::Cpython, "_cpython")] {
        let policy = ChainPolicy {
            python,
            ..ChainPolicy::default()
        };
        let mut group = c.benchmark_group(format!("session{suffix}"));
        group.measurement_time(Duration::from_secs(10));
        group.bench_function("chain", |b| {
            b.to_async(&runtime)
                .iter(|| engine.run("1", &registry, &policy, &approval))
        });
        group.bench_function("chain_call", |b| {
            b.to_async(&runtime)
                .iter(|| engine.run("v1 = await noop(i=1)\nv1", &registry, &policy, &approval))
        });
        for ((name, url), cells) in stores.iter().flat_map(|store| CELLS.map(|n| (store, n))) {
            let store: Arc<dyn ChainStore> = runtime.block_on(store::connect(url)).expect("store");
            let durable = Durable::new(engine.clone(), store.clone());
            let mut id = NEW_SESSION.to_owned();
            for k in 0..cells {
                let cell = format!("v{k} = await noop(i={k})");
                let r = runtime
                    .block_on(durable.run_cell(&id, &cell, &registry, &policy, &approval))
                    .expect("a cell");
                assert!(r.is_ok(), "{r:?}");
                id = r.session.expect("a session").session_id;
            }
            if cells == 1 {
                let mut warm = (String::new(), WARM_CELLS);
                group.bench_function(format!("warm_cell_{name}"), |b| {
                    b.iter_custom(|iters| {
                        let mut spent = Duration::ZERO;
                        for _ in 0..iters {
                            if warm.1 == WARM_CELLS {
                                let r = runtime
                                    .block_on(durable.run_cell(NEW_SESSION, "v = 0", &registry, &policy, &approval))
                                    .expect("a cell");
                                warm = (r.session.expect("a session").session_id, 1);
                            }
                            let cell = format!("v{k} = await noop(i={k})\nv{k}", k = warm.1);
                            let start = Instant::now();
                            let r = runtime
                                .block_on(durable.run_cell(&warm.0, &cell, &registry, &policy, &approval))
                                .expect("a cell");
                            spent += start.elapsed();
                            assert!(r.is_ok(), "{r:?}");
                            warm.1 += 1;
                        }
                        spent
                    })
                });
            }
            let last = format!("v{}", cells - 1);
            group.bench_function(format!("rebuild_{cells}_cells_{name}"), |b| {
                b.iter_custom(|iters| {
                    let mut spent = Duration::ZERO;
                    for _ in 0..iters {
                        let n = copies.fetch_add(1, Ordering::Relaxed);
                        let copy = runtime.block_on(copy(&store, &id, n));
                        let start = Instant::now();
                        let r = runtime
                            .block_on(durable.run_cell(&copy, &last, &registry, &policy, &approval))
                            .expect("a cell");
                        spent += start.elapsed();
                        assert!(r.is_ok(), "{r:?}");
                    }
                    spent
                })
            });
        }
        group.finish();
    }
}

criterion_group!(session, benches);
criterion_main!(session);
