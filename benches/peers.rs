//! Peer comparison, Rust side: the workloads of `benches/peers/workloads/`
//! through chainbox (`Engine::run`, a fresh sandbox per chain; on the monty
//! guest and, as `chainbox_cpython`, on the CPython guest) and through
//! native monty (the `monty` crate in-process, the floor for this
//! interpreter). Prints one JSON array (one object per peer, medians in µs)
//! on stdout for `benches/peers/run.sh`; run with `cargo bench --bench peers`.
//!
//! Sampling is the same in every peer runner: warm up for `PEERS_WARMUP_S`
//! (at least 2 runs), then take samples until `PEERS_BUDGET_S` has passed,
//! with at least 3 and at most 2000 samples; report the median.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use chainbox::{
    Approval, ChainPolicy, Engine, PythonChoice, Tool, ToolContext, ToolError, ToolInfo, ToolOutput, ToolRegistry,
    ToolRisk,
};
use monty::{MontyRun, RunProgress};
use monty_types::{CompileOptions, ExtFunctionResult, MontyObject, NameLookupResult, PrintWriter, ResourceTracker};
use serde_json::{Map, Value, json};

/// The workloads, read at compile time so the bench measures exactly the files
/// the other peers read.
const WORKLOADS: [(&str, &str); 6] = [
    ("start", include_str!("peers/workloads/start.py")),
    ("call_1", include_str!("peers/workloads/call_1.py")),
    ("calls_100", include_str!("peers/workloads/calls_100.py")),
    ("fib25", include_str!("peers/workloads/fib25.py")),
    ("loop_1e6", include_str!("peers/workloads/loop_1e6.py")),
    ("gather_10x50ms", include_str!("peers/workloads/gather_10x50ms.py")),
];

/// Upper bound on samples, so µs-scale workloads do not run for the whole budget.
const MAX_SAMPLES: usize = 2000;
/// Lower bound on samples, so slow workloads still give a median.
const MIN_SAMPLES: usize = 3;

/// `noop()`: returns `None` at once; measures the call path alone.
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

/// `sleep(seconds)`: an I/O-bound tool, so gathered calls show concurrency.
struct Sleep(ToolInfo);

#[async_trait]
impl Tool for Sleep {
    fn info(&self) -> &ToolInfo {
        &self.0
    }
    async fn execute(&self, _ctx: ToolContext, args: Map<String, Value>) -> Result<ToolOutput, ToolError> {
        let s = args.get("seconds").and_then(Value::as_f64).unwrap_or(0.0);
        tokio::time::sleep(Duration::from_secs_f64(s)).await;
        Ok(ToolOutput::Value(Value::Null))
    }
}

/// The same script in native monty, tools answered by the host inline: an
/// awaited call is answered eagerly, a call that is not awaited at once (a
/// gather) becomes a pending future resolved when its sleep is over, so
/// gathered sleeps overlap as they do in chainbox.
fn native(script: &str) -> MontyObject {
    let runner = MontyRun::new(script.to_owned(), "main.py", vec![], CompileOptions::default()).expect("compiles");
    let mut progress = runner
        .start(vec![], ResourceTracker::default(), PrintWriter::Disabled)
        .expect("starts");
    let mut pending: Vec<(u32, Instant)> = Vec::new();
    loop {
        progress = match progress {
            RunProgress::Complete(v) => return v,
            RunProgress::NameLookup(l) => {
                let f = MontyObject::function(l.name.clone(), None);
                l.resume(NameLookupResult::Value(f), PrintWriter::Disabled)
                    .expect("lookup")
            }
            RunProgress::FunctionCall(c) => {
                let delay = match c.function_name.as_str() {
                    "sleep" => {
                        Duration::from_secs_f64(c.args.kwarg("seconds").and_then(|v| v.as_float()).unwrap_or(0.0))
                    }
                    _ => Duration::ZERO,
                };
                if c.allow_eager_await {
                    std::thread::sleep(delay);
                    c.resume_eager(Ok(MontyObject::none()), PrintWriter::Disabled)
                        .expect("call")
                } else {
                    pending.push((c.call_id, Instant::now() + delay));
                    c.resume_pending(PrintWriter::Disabled).expect("call")
                }
            }
            RunProgress::ResolveFutures(f) => {
                let first = pending.iter().map(|(_, d)| *d).min().expect("a pending call");
                std::thread::sleep(first.saturating_duration_since(Instant::now()));
                let now = Instant::now();
                let (done, rest): (Vec<_>, Vec<_>) = pending.into_iter().partition(|(_, d)| *d <= now);
                pending = rest;
                let results = done
                    .into_iter()
                    .map(|(id, _)| (id, ExtFunctionResult::Return(MontyObject::none())))
                    .collect();
                f.resume(results, PrintWriter::Disabled).expect("resolve")
            }
            other => panic!("unexpected {other:?}"),
        };
    }
}

/// Seconds from an environment variable, else `default`.
fn env_secs(name: &str, default: f64) -> Duration {
    let s = std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default);
    Duration::from_secs_f64(s)
}

/// What [`sample`] measured.
struct Sampled {
    median_us: f64,
    samples: usize,
    /// CPU time of the whole process (every thread: the engine's
    /// housekeepers too) per sample.
    cpu_us: f64,
}

/// Warm up, then time `run` repeatedly.
async fn sample<F, Fut>(mut run: F, warmup: Duration, budget: Duration) -> Sampled
where
    F: FnMut() -> Fut,
    Fut: Future<Output = ()>,
{
    let start = Instant::now();
    let mut runs = 0;
    while runs < 2 || start.elapsed() < warmup {
        run().await;
        runs += 1;
    }
    let mut times = Vec::new();
    let cpu = process_cpu();
    let start = Instant::now();
    while times.len() < MIN_SAMPLES || (start.elapsed() < budget && times.len() < MAX_SAMPLES) {
        let t = Instant::now();
        run().await;
        times.push(t.elapsed().as_secs_f64() * 1e6);
    }
    let cpu_us = (process_cpu() - cpu).as_secs_f64() * 1e6 / times.len() as f64;
    times.sort_by(f64::total_cmp);
    Sampled {
        median_us: times[times.len() / 2],
        samples: times.len(),
        cpu_us,
    }
}

/// CPU time (user and system) the process has used so far, all threads.
fn process_cpu() -> Duration {
    // SAFETY: getrusage only writes the struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    let time = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    time(usage.ru_utime) + time(usage.ru_stime)
}

/// Callers of the throughput row: chains in flight at once.
const CALLERS: usize = 8;

/// [`CALLERS`] tasks on `runtime`, each running `script` back to back
/// through one engine for `budget` (after `warmup`): chains a second, the
/// latency's median and 99th percentile, and process CPU per chain.
fn throughput(
    runtime: &tokio::runtime::Runtime,
    engine: &Engine,
    registry: &ToolRegistry,
    policy: &ChainPolicy,
    script: &'static str,
    warmup: Duration,
    budget: Duration,
) -> Value {
    let run_for = |span: Duration| {
        let tasks: Vec<_> = (0..CALLERS)
            .map(|_| {
                let (engine, registry, policy) = (engine.clone(), registry.clone(), policy.clone());
                runtime.spawn(async move {
                    let approval = Approval::auto(ToolRisk::Safe);
                    let mut times = Vec::new();
                    let start = Instant::now();
                    while start.elapsed() < span {
                        let t = Instant::now();
                        let r = engine.run(script, &registry, &policy, &approval).await;
                        assert!(r.is_ok(), "{r:?}");
                        times.push(t.elapsed().as_secs_f64() * 1e6);
                    }
                    times
                })
            })
            .collect();
        let mut times: Vec<f64> = Vec::new();
        for task in tasks {
            times.extend(runtime.block_on(task).expect("caller"));
        }
        times
    };
    run_for(warmup);
    let cpu = process_cpu();
    let start = Instant::now();
    let mut times = run_for(budget);
    let elapsed = start.elapsed().as_secs_f64();
    let cpu_us = (process_cpu() - cpu).as_secs_f64() * 1e6 / times.len() as f64;
    times.sort_by(f64::total_cmp);
    let at = |q: f64| times[((times.len() - 1) as f64 * q) as usize];
    json!({
        "callers": CALLERS,
        "chains_per_s": times.len() as f64 / elapsed,
        "median_us": at(0.5),
        "p99_us": at(0.99),
        "cpu_us": cpu_us,
        "samples": times.len(),
    })
}

fn main() {
    let warmup = env_secs("PEERS_WARMUP_S", 0.3);
    let budget = env_secs("PEERS_BUDGET_S", 2.0);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let engine = Engine::new().expect("engine");
    let registry = ToolRegistry::from_local([
        Arc::new(Noop(ToolInfo::new(
            "noop",
            "Does nothing.",
            json!({"type": "object", "properties": {}}),
        ))) as Arc<dyn Tool>,
        Arc::new(Sleep(ToolInfo::new(
            "sleep",
            "Sleeps on the host.",
            json!({"type": "object", "properties": {"seconds": {"type": "number"}}}),
        ))),
    ])
    .expect("registry");
    // The default policy, with room for the 100-call workload.
    let policy = ChainPolicy {
        max_tool_calls: 1000,
        ..ChainPolicy::default()
    };
    let approval = Approval::auto(ToolRisk::Safe);

    let cpython = ChainPolicy {
        python: PythonChoice::Cpython,
        ..policy.clone()
    };

    let mut chainbox = Map::new();
    let mut chainbox_cpython = Map::new();
    let mut native_monty = Map::new();
    for (name, script) in WORKLOADS {
        for (label, policy, figures) in [
            ("chainbox", &policy, &mut chainbox),
            ("chainbox_cpython", &cpython, &mut chainbox_cpython),
        ] {
            let r = runtime.block_on(engine.run(script, &registry, policy, &approval));
            assert!(r.is_ok(), "{label} {name}: {r:?}");
            let s = runtime.block_on(sample(
                || async {
                    let r = engine.run(script, &registry, policy, &approval).await;
                    debug_assert!(r.is_ok());
                },
                warmup,
                budget,
            ));
            eprintln!(
                "{label} {name}: {:.1} µs, CPU {:.1} µs ({} samples)",
                s.median_us, s.cpu_us, s.samples
            );
            figures.insert(
                name.into(),
                json!({"median_us": s.median_us, "samples": s.samples, "cpu_us": s.cpu_us}),
            );
        }

        let s = runtime.block_on(sample(
            || async {
                native(script);
            },
            warmup,
            budget,
        ));
        eprintln!("native_monty {name}: {:.1} µs ({} samples)", s.median_us, s.samples);
        native_monty.insert(name.into(), json!({"median_us": s.median_us, "samples": s.samples}));
    }
    // Trivial chains from many callers at once: what one engine serves.
    let start_script = WORKLOADS[0].1;
    let mut rates = Map::new();
    for (label, policy) in [("chainbox", &policy), ("chainbox_cpython", &cpython)] {
        let row = throughput(&runtime, &engine, &registry, policy, start_script, warmup, budget);
        eprintln!("{label} throughput: {row}");
        rates.insert(label.into(), row);
    }
    let out = json!([
        {
            "peer": "chainbox",
            "version": env!("CARGO_PKG_VERSION"),
            "how": "Engine::run per chain (fresh sandbox), warm engine, tools as Rust `Tool`s",
            "workloads": chainbox,
            "throughput": rates.get("chainbox"),
        },
        {
            "peer": "chainbox_cpython",
            "version": env!("CARGO_PKG_VERSION"),
            "how": "the same, on the CPython 3.14 guest (policy python = \"cpython\")",
            "workloads": chainbox_cpython,
            "throughput": rates.get("chainbox_cpython"),
        },
        {
            "peer": "native_monty",
            "version": "monty 1.4.0 (crate)",
            "how": "MontyRun per chain in-process, tools answered inline",
            "workloads": native_monty,
        },
    ]);
    println!("{out}");
}
