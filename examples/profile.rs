//! Runs one script many times through the engine (or through native monty
//! in-process) and prints the median wall time per run: the loop to point
//! `perf record` or `valgrind --tool=callgrind` at when profiling.
//!
//! ```text
//! cargo run --release --example profile -- SCRIPT.py [RUNS] [--native|--compare] [--mt] [--cpython|--auto]
//! ```
//!
//! `--compare` alternates chainbox and native runs in one process and prints
//! both and their ratio: on a noisy machine, interleaving keeps drift from
//! favouring either side. `--compare --no-prefault` alternates with an
//! engine that does not prefault its hot pages instead of native monty.
//!
//! `--cpython` runs the chains on the CPython guest (`python = "cpython"`);
//! `--auto` lets the scan choose (`python = "auto"`), monty otherwise.
//! `--compare --auto` alternates `auto` and `monty` chains on one engine:
//! what choosing the guest costs a monty chain.
//!
//! `--callers N` runs the chains from N concurrent tasks on a multi-thread
//! runtime and prints chains a second and process CPU per chain.
//!
//! `--idle MS` pauses MS milliseconds (untimed) before each run (each of
//! the pair with `--compare`), as an
//! agent's model thinks between chains: the latency of a chain on an idle
//! engine, not back-to-back throughput (each guest's housekeeper prepares
//! the next instance, and tears the last one down, between chains).
//!
//! The script may call `noop()`, a tool that returns `None`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use chainbox::{
    Approval, ChainPolicy, Engine, EngineConfig, PythonChoice, Tool, ToolContext, ToolError, ToolInfo, ToolOutput,
    ToolRegistry, ToolRisk,
};
use monty::{MontyRun, RunProgress};
use monty_types::{CompileOptions, MontyObject, NameLookupResult, PrintWriter, ResourceTracker};
use serde_json::{Map, Value, json};

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
    let native_only = args.iter().any(|a| a == "--native");
    let compare = args.iter().any(|a| a == "--compare");
    // `--mt`: a multi-thread runtime, as criterion's benches and most
    // embedders use; the default is one thread, the engine's own floor.
    let runtime = if args.iter().any(|a| a == "--mt") {
        tokio::runtime::Builder::new_multi_thread().enable_all().build()
    } else {
        tokio::runtime::Builder::new_current_thread().enable_all().build()
    }
    .expect("runtime");
    // `--no-prefault`: chains fault their pages in one by one; with
    // `--compare`, alternate an engine without prefaulting instead of native.
    let no_prefault = args.iter().any(|a| a == "--no-prefault");
    // `--slots N`: pool slots (default 4; criterion's benches use the
    // engine's default, 1,000).
    let slots = args
        .iter()
        .position(|a| a == "--slots")
        .and_then(|i| args.get(i + 1)?.parse().ok())
        .unwrap_or(4);
    let new_engine = |prefault| {
        Engine::with_config(EngineConfig {
            max_concurrent_chains: slots,
            prefault,
            ..EngineConfig::default()
        })
        .expect("engine")
    };
    let (engine, other) = match (no_prefault, compare) {
        (true, true) => (new_engine(true), Some(new_engine(false))),
        (no_prefault, _) => (new_engine(!no_prefault), None),
    };
    let noop = Noop(ToolInfo::new(
        "noop",
        "Does nothing.",
        json!({"type": "object", "properties": {}}),
    ));
    let registry = ToolRegistry::from_local([Arc::new(noop) as Arc<dyn Tool>]).expect("registry");
    let python = if args.iter().any(|a| a == "--cpython") {
        PythonChoice::Cpython
    } else if args.iter().any(|a| a == "--auto") {
        PythonChoice::Auto
    } else {
        PythonChoice::Monty
    };
    let policy = ChainPolicy {
        max_tool_calls: 100_000,
        python,
        ..ChainPolicy::default()
    };
    let monty_policy = ChainPolicy {
        python: PythonChoice::Monty,
        ..policy.clone()
    };
    let versus_monty = compare && python == PythonChoice::Auto;
    let approval = Approval::auto(ToolRisk::Safe);
    // `--callers N`: N tasks on a multi-thread runtime, each running its
    // share of the chains back to back (what a busy server sees).
    if let Some(callers) = args
        .iter()
        .position(|a| a == "--callers")
        .and_then(|i| args.get(i + 1)?.parse::<usize>().ok())
    {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let cpu = process_cpu();
        let start = Instant::now();
        let tasks: Vec<_> = (0..callers)
            .map(|_| {
                let (engine, registry, policy, script) =
                    (engine.clone(), registry.clone(), policy.clone(), script.clone());
                runtime.spawn(async move {
                    for _ in 0..runs / callers {
                        let r = engine
                            .run(&script, &registry, &policy, &Approval::auto(ToolRisk::Safe))
                            .await;
                        assert!(r.is_ok(), "{r:?}");
                    }
                })
            })
            .collect();
        for task in tasks {
            runtime.block_on(task).expect("caller");
        }
        let chains = (runs / callers * callers) as u32;
        println!(
            "{chains} chains from {callers} callers: {:.0} chains/s, process CPU per chain {:?}",
            chains as f64 / start.elapsed().as_secs_f64(),
            (process_cpu() - cpu) / chains
        );
        return;
    }
    let faults = std::cell::Cell::new(0u64);
    let chainbox = || {
        let before = thread_minor_faults();
        let t = Instant::now();
        let result = runtime.block_on(engine.run(&script, &registry, &policy, &approval));
        let elapsed = t.elapsed();
        faults.set(faults.get() + thread_minor_faults() - before);
        assert!(result.is_ok(), "{result:?}");
        elapsed
    };
    let native = || {
        let t = Instant::now();
        match &other {
            Some(engine) => {
                let result = runtime.block_on(engine.run(&script, &registry, &policy, &approval));
                assert!(result.is_ok(), "{result:?}");
            }
            None if versus_monty => {
                let result = runtime.block_on(engine.run(&script, &registry, &monty_policy, &approval));
                assert!(result.is_ok(), "{result:?}");
            }
            None => native(&script),
        }
        t.elapsed()
    };
    let idle = args
        .iter()
        .position(|a| a == "--idle")
        .and_then(|i| args.get(i + 1)?.parse().ok())
        .map(Duration::from_millis);
    let (mut ours, mut theirs) = (Vec::with_capacity(runs), Vec::with_capacity(runs));
    let cpu_before = process_cpu();
    for _ in 0..runs {
        if let Some(idle) = idle {
            std::thread::sleep(idle);
        }
        if !native_only {
            ours.push(chainbox());
        }
        if native_only || compare {
            if let Some(idle) = idle.filter(|_| compare) {
                std::thread::sleep(idle);
            }
            theirs.push(native());
        }
    }
    let cpu = process_cpu().saturating_sub(cpu_before);
    if compare {
        let ((om, omin), (tm, tmin)) = (summary(ours), summary(theirs));
        let theirs = match (&other, versus_monty) {
            (Some(_), _) => "no-prefault",
            (None, true) => "monty",
            (None, false) => "native",
        };
        println!(
            "{runs} runs: chainbox median {om:?} min {omin:?}; {theirs} median {tm:?} min {tmin:?}; \
             ratio median {:.2} min {:.2}",
            om.as_secs_f64() / tm.as_secs_f64(),
            omin.as_secs_f64() / tmin.as_secs_f64()
        );
        return;
    }
    let times = if native_only { theirs } else { ours };
    if std::env::var_os("PROFILE_DECILES").is_some() {
        let mut sorted = times.clone();
        sorted.sort();
        let deciles: Vec<String> = (0..=10)
            .map(|d| format!("{:.2}", sorted[(d * (sorted.len() - 1)) / 10].as_secs_f64() * 1e3))
            .collect();
        println!("deciles (ms): {}", deciles.join(" "));
    }
    let (median, min) = summary(times);
    println!("{runs} runs, median {median:?}, min {min:?}");
    if !native_only {
        // Without `--mt` the chains run on this thread: each fault here is
        // a page the chain touched first (~8 µs each in a VM).
        println!(
            "minor page faults on the calling thread: {:.1} per run",
            faults.get() as f64 / runs as f64
        );
    }
    // Every thread of the process: the chain's, the runtime's and the
    // housekeeper's (tearing the last instance down, making the next).
    println!("process CPU per run (all threads): {:?}", cpu / runs as u32);
}

/// CPU time (user and system) the process has used so far, all threads.
fn process_cpu() -> Duration {
    // SAFETY: getrusage only writes the struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    let time = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    time(usage.ru_utime) + time(usage.ru_stime)
}

/// Minor page faults the calling thread has taken so far.
fn thread_minor_faults() -> u64 {
    // SAFETY: getrusage only writes the struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut usage) };
    usage.ru_minflt as u64
}
