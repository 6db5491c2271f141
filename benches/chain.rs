//! The engine's hot paths, each next to native monty in the same run:
//! - `start`: a trivial chain (`1 + 1`) from nothing to result;
//! - `call_1`: a chain making one awaited call of a no-op tool;
//! - `calls_100`: 100 sequential awaited calls (per-call overhead is
//!   `(calls_100 - start) / 100`);
//! - `fib25` and `loop_1e6`: CPU-bound Python, with the CPU limit on;
//! - `gather_10x50ms`: ten gathered calls of a tool sleeping 50 ms
//!   (concurrency: ideal is 50 ms);
//! - `invoker_call`: one call through the invoker alone (budget, digest,
//!   schema check, policy, record, shaping), no sandbox;
//! - `python_choice_*`: the scan `python = "auto"` runs on a chain's script
//!   before it starts (two corpus scripts), also on a thread with a tokio
//!   worker's stack (`_on_worker`), where it needs a stack grown for it.
//!
//! Native monty runs the same script through the `monty` crate in-process,
//! external calls answered inline: the floor for this interpreter. It has no
//! host-side concurrency, so `gather_10x50ms` and `invoker_call` are chainbox
//! only.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use chainbox::invoker::InvokerSession;
use chainbox::{
    Approval, ChainPolicy, Engine, MemoryArtifactStore, Tool, ToolContext, ToolError, ToolInfo, ToolOutput,
    ToolRegistry, ToolRisk,
};
use chainbox_protocol::{CallOutcome, ToolCall};
use criterion::{Criterion, criterion_group, criterion_main};
use monty::{MontyRun, RunProgress};
use monty_types::{CompileOptions, MontyObject, NameLookupResult, PrintWriter, ResourceTracker};
use serde_json::{Map, Value, json};

const TRIVIAL: &str = "1 + 1";
const CALL_1: &str = "await noop()";
const CALLS_100: &str = "for i in range(100):\n    await noop()\n'done'";
const FIB_25: &str = "def fib(n):\n    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)\nfib(25)";
const LOOP_1E6: &str = "total = 0\nfor i in range(1000000):\n    total += i\ntotal";
const GATHER_10: &str = "import asyncio\nr = await asyncio.gather(*[nap() for _ in range(10)])\nlen(r)";

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

/// Sleeps 50 ms on the host's timer.
struct Nap(ToolInfo);

#[async_trait]
impl Tool for Nap {
    fn info(&self) -> &ToolInfo {
        &self.0
    }
    async fn execute(&self, _ctx: ToolContext, _args: Map<String, Value>) -> Result<ToolOutput, ToolError> {
        tokio::time::sleep(Duration::from_millis(50)).await;
        Ok(ToolOutput::Value(Value::Null))
    }
}

/// The same script in native monty; external calls resolved inline as eager awaits.
fn native(script: &str) -> MontyObject {
    let runner = MontyRun::new(script.to_owned(), "main.py", vec![], CompileOptions::default()).expect("compiles");
    let mut progress = runner
        .start(vec![], ResourceTracker::default(), PrintWriter::Disabled)
        .expect("starts");
    loop {
        progress = match progress {
            RunProgress::Complete(v) => return v,
            RunProgress::NameLookup(l) => {
                let f = MontyObject::function(l.name.clone(), None);
                l.resume(NameLookupResult::Value(f), PrintWriter::Disabled)
                    .expect("lookup")
            }
            RunProgress::FunctionCall(c) => c
                .resume_eager(Ok(MontyObject::none()), PrintWriter::Disabled)
                .expect("call"),
            other => panic!("unexpected {other:?}"),
        };
    }
}

fn benches(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let engine = Engine::new().expect("engine");
    let empty = json!({"type": "object", "properties": {}});
    let registry = ToolRegistry::from_local([
        Arc::new(Noop(ToolInfo::new("noop", "Does nothing.", empty.clone()))) as Arc<dyn Tool>,
        Arc::new(Nap(ToolInfo::new("nap", "Sleeps 50 ms.", empty))) as Arc<dyn Tool>,
    ])
    .expect("registry");
    let policy = ChainPolicy {
        max_tool_calls: 1000,
        ..ChainPolicy::default()
    };
    let approval = Approval::auto(ToolRisk::Safe);
    let workloads = [
        ("start", TRIVIAL),
        ("call_1", CALL_1),
        ("calls_100", CALLS_100),
        ("fib25", FIB_25),
        ("loop_1e6", LOOP_1E6),
        ("gather_10x50ms", GATHER_10),
    ];
    for (name, script) in workloads {
        let r = runtime.block_on(engine.run(script, &registry, &policy, &approval));
        assert!(r.is_ok(), "{name}: {r:?}");
        let mut group = c.benchmark_group(name);
        if matches!(name, "fib25" | "loop_1e6" | "gather_10x50ms") {
            group.sample_size(10);
        }
        group.bench_function("chainbox", |b| {
            b.to_async(&runtime)
                .iter(|| engine.run(script, &registry, &policy, &approval))
        });
        if name != "gather_10x50ms" {
            group.bench_function("native_monty", |b| b.iter(|| native(script)));
        }
        group.finish();
    }
    invoker_call(c, &runtime);
    python_choice(c);
}

/// What `python = "auto"` adds to every chain before it starts: the scan
/// that picks the interpreter, on a realistic chain of the corpus.
fn python_choice(c: &mut Criterion) {
    let scripts = [
        (
            "python_choice_gather_metrics_week",
            include_str!("../tests/corpus/cases/gather_metrics_week.py"),
        ),
        (
            "python_choice_paginate_orders_cursor",
            include_str!("../tests/corpus/cases/paginate_orders_cursor.py"),
        ),
    ];
    for (name, script) in scripts {
        c.bench_function(name, |b| {
            b.iter(|| chainbox::python_choice::needs_cpython(std::hint::black_box(script)))
        });
        on_worker_stack(c, name, script);
    }
}

/// The same scan on a thread with a tokio worker's stack (2 MiB), where a
/// chain's scan runs: a script over ~200 bytes does not fit what is left
/// there, and is scanned on a stack `stacker` grows for it.
fn on_worker_stack(c: &mut Criterion, name: &str, script: &'static str) {
    let needed = script.len() * 8 * 1024 + 256 * 1024;
    assert!(
        needed > 2 << 20,
        "{name}: a script the worker's stack holds shows nothing"
    );
    let (iterations, asked) = std::sync::mpsc::channel::<u64>();
    let (timed, answered) = std::sync::mpsc::channel::<Duration>();
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || {
            for n in asked {
                let started = std::time::Instant::now();
                for _ in 0..n {
                    std::hint::black_box(chainbox::python_choice::needs_cpython(std::hint::black_box(script)));
                }
                let _ = timed.send(started.elapsed());
            }
        })
        .expect("a worker-sized thread");
    c.bench_function(&format!("{name}_on_worker"), |b| {
        b.iter_custom(|n| {
            iterations.send(n).expect("the worker-sized thread");
            answered.recv().expect("its timing")
        })
    });
}

/// One call through the invoker alone: budget, args digest, schema check,
/// policy and risk gates, the no-op tool, shaping and the trace record.
fn invoker_call(c: &mut Criterion, runtime: &tokio::runtime::Runtime) {
    let schema = json!({
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}},
        "required": ["city"],
        "additionalProperties": false
    });
    let registry =
        ToolRegistry::from_local([Arc::new(Noop(ToolInfo::new("noop", "Does nothing.", schema))) as Arc<dyn Tool>])
            .expect("registry");
    let policy = Arc::new(ChainPolicy::default());
    let approval = Approval::auto(ToolRisk::Safe);
    let store = Arc::new(MemoryArtifactStore::new());
    let session = || {
        InvokerSession::new(
            "bench".into(),
            registry.clone(),
            policy.clone(),
            approval.clone(),
            store.clone(),
        )
    };
    let call = || ToolCall {
        tool: "noop".into(),
        args: json!({"city": "Paris", "days": 3})
            .as_object()
            .cloned()
            .unwrap_or_default(),
    };
    let outcome = runtime.block_on(session().invoke(call()));
    assert!(matches!(outcome, Ok(CallOutcome::Ok { .. })), "{outcome:?}");
    c.bench_function("invoker_call", |b| {
        b.to_async(runtime).iter_batched(
            || (session(), call()),
            |(session, call)| async move { session.invoke(call).await.expect("within budget") },
            criterion::BatchSize::SmallInput,
        )
    });
}

criterion_group!(chain, benches);
criterion_main!(chain);
