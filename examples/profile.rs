//! Runs one script many times through the engine (or through native monty
//! in-process) and prints the median wall time per run: the loop to point
//! `perf record` or `valgrind --tool=callgrind` at when profiling.
//!
//! ```text
//! cargo run --release --example profile -- SCRIPT.py [RUNS] [--native]
//! ```
//!
//! The script may call `noop()`, a tool that returns `None`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use chainbox::{
    Approval, ChainPolicy, Engine, EngineConfig, Tool, ToolContext, ToolError, ToolOutput, ToolRegistry, ToolRisk,
};
use monty::{MontyRun, RunProgress};
use monty_types::{CompileOptions, MontyObject, NameLookupResult, PrintWriter, ResourceTracker};
use serde_json::{Map, Value, json};

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

/// The script in native monty, external calls answered inline.
fn native(script: &str) {
    let runner = MontyRun::new(script.to_owned(), "main.py", vec![], CompileOptions::default()).expect("compiles");
    let mut progress = runner
        .start(vec![], ResourceTracker::default(), PrintWriter::Disabled)
        .expect("starts");
    loop {
        progress = match progress {
            RunProgress::Complete(_) => return,
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

/// Median and minimum; on a busy machine the minimum is the better estimate
/// of a deterministic workload's cost.
fn summary(mut times: Vec<Duration>) -> (Duration, Duration) {
    times.sort();
    (times[times.len() / 2], times[0])
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let path = args.first().expect("usage: profile SCRIPT.py [RUNS] [--native]");
    let script = std::fs::read_to_string(path).expect("readable script");
    let runs: usize = args.get(1).and_then(|n| n.parse().ok()).unwrap_or(100);
    let mut times = Vec::with_capacity(runs);
    if args.iter().any(|a| a == "--native") {
        for _ in 0..runs {
            let t = Instant::now();
            native(&script);
            times.push(t.elapsed());
        }
    } else {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let engine = Engine::with_config(EngineConfig {
            max_concurrent_chains: 4,
            ..EngineConfig::default()
        })
        .expect("engine");
        let noop = Noop(json!({"type": "object", "properties": {}}));
        let registry = ToolRegistry::from_local([Arc::new(noop) as Arc<dyn Tool>]).expect("registry");
        let policy = ChainPolicy {
            max_tool_calls: 100_000,
            ..ChainPolicy::default()
        };
        let approval = Approval::auto(ToolRisk::Safe);
        for _ in 0..runs {
            let t = Instant::now();
            let result = runtime.block_on(engine.run(&script, &registry, &policy, &approval));
            times.push(t.elapsed());
            assert!(result.is_ok(), "{result:?}");
        }
    }
    let (median, min) = summary(times);
    println!("{runs} runs, median {median:?}, min {min:?}");
}
