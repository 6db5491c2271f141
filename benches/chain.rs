//! Call overhead of chainbox against native monty, measured in one run:
//! - `start`: a trivial chain (`1 + 1`) from nothing to result;
//! - `calls_100`: 100 sequential awaited calls of a no-op tool;
//! - `fib25`: CPU-bound Python.
//!
//! Each workload also runs in native monty (the same script through the
//! `monty` crate in-process, external calls answered inline), the floor for
//! this interpreter.

use std::sync::Arc;

use async_trait::async_trait;
use chainbox::{Approval, ChainPolicy, Engine, Tool, ToolContext, ToolError, ToolOutput, ToolRegistry, ToolRisk};
use criterion::{Criterion, criterion_group, criterion_main};
use monty::{MontyRun, RunProgress};
use monty_types::{CompileOptions, MontyObject, NameLookupResult, PrintWriter, ResourceTracker};
use serde_json::{Map, Value, json};

const TRIVIAL: &str = "1 + 1";
const CALLS_100: &str = "for i in range(100):\n    await noop()\n'done'";
const FIB_25: &str = "def fib(n):\n    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)\nfib(25)";

struct Noop(Value);

#[async_trait]
impl Tool for Noop {
    fn name(&self) -> &str {
        "noop"
    }
    fn description(&self) -> &str {
        "Does nothing."
    }
    fn input_schema(&self) -> &Value {
        &self.0
    }
    async fn execute(&self, _ctx: ToolContext, _args: Map<String, Value>) -> Result<ToolOutput, ToolError> {
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
    let registry =
        ToolRegistry::from_local([Arc::new(Noop(json!({"type": "object", "properties": {}}))) as Arc<dyn Tool>])
            .expect("registry");
    let policy = ChainPolicy {
        max_tool_calls: 1000,
        ..ChainPolicy::default()
    };
    let approval = Approval::auto(ToolRisk::Safe);
    for (name, script) in [("start", TRIVIAL), ("calls_100", CALLS_100), ("fib25", FIB_25)] {
        let r = runtime.block_on(engine.run(script, &registry, &policy, &approval));
        assert!(r.is_ok(), "{name}: {r:?}");
        let mut group = c.benchmark_group(name);
        if name == "fib25" {
            group.sample_size(10);
        }
        group.bench_function("chainbox", |b| {
            b.to_async(&runtime)
                .iter(|| engine.run(script, &registry, &policy, &approval))
        });
        group.bench_function("native_monty", |b| b.iter(|| native(script)));
        group.finish();
    }
}

criterion_group!(chain, benches);
criterion_main!(chain);
