//! Resident memory per CPython chain, measured the same way in the
//! workspace (`cargo test --test it resident::`) and by the crate outside
//! it that depends on chainbox as an embedder does (`tests/embed`, which
//! includes this file): the embedder's build has the registry's wasmtime,
//! without `vendor/wasmtime`'s fixes, and must get the same figure.
//!
//! Only chainbox's public API, tokio, serde_json and async-trait: both
//! crates have them.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use chainbox::{
    Approval, ChainPolicy, Engine, EngineConfig, PythonChoice, Tool, ToolContext, ToolError, ToolInfo, ToolOutput,
    ToolRegistry, ToolRisk,
};
use serde_json::{Map, Value, json};
use tokio::sync::Notify;

/// Chains parked at once, each round: within what a freed slot's pages
/// are kept warm for (8 idle slots per guest).
const CHAINS: usize = 4;

/// The bound on the PSS a parked CPython chain adds, in KiB. The workspace
/// build measures ~3 MiB (the pages a chain writes; BENCHMARKS.md); with
/// wasmtime 50.0.1's reset a reused slot comes back with every page of its
/// kept span resident, ~10 MiB and more. 6 MiB leaves room for the guest
/// growing and for allocator noise, and none for that.
const MAX_KIB_PER_CHAIN: f64 = 8.0 * 1024.0;

/// Parks until released, counting the chains that reached it.
struct Park {
    info: ToolInfo,
    arrived: AtomicUsize,
    released: AtomicBool,
    release: Notify,
}

#[async_trait]
impl Tool for Park {
    fn info(&self) -> &ToolInfo {
        &self.info
    }
    async fn execute(&self, _ctx: ToolContext, _args: Map<String, Value>) -> Result<ToolOutput, ToolError> {
        let released = self.release.notified();
        tokio::pin!(released);
        released.as_mut().enable();
        self.arrived.fetch_add(1, Ordering::SeqCst);
        if !self.released.load(Ordering::SeqCst) {
            released.await;
        }
        Ok(ToolOutput::Value(json!("released")))
    }
}

/// This process's PSS, in KiB: shared image pages divided among their
/// users, so what the chains really take.
fn pss_kib() -> f64 {
    let rollup = std::fs::read_to_string("/proc/self/smaps_rollup").expect("smaps_rollup");
    rollup
        .lines()
        .find_map(|l| l.strip_prefix("Pss:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .expect("a Pss line")
}

/// Parks [`CHAINS`] CPython chains, releases them and waits for all.
/// Returns the PSS while they were parked.
async fn round(engine: &Engine) -> f64 {
    let park = Arc::new(Park {
        info: ToolInfo::new(
            "park",
            "Waits until released.",
            json!({"type": "object", "properties": {}}),
        ),
        arrived: AtomicUsize::new(0),
        released: AtomicBool::new(false),
        release: Notify::new(),
    });
    let registry = ToolRegistry::from_local([park.clone() as Arc<dyn Tool>]).expect("registry");
    let policy = ChainPolicy {
        python: PythonChoice::Cpython,
        total_timeout_s: 600.0,
        call_timeout_s: 600.0,
        ..ChainPolicy::default()
    };
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..CHAINS {
        let (engine, registry, policy) = (engine.clone(), registry.clone(), policy.clone());
        tasks.spawn(async move {
            let script = "data = [i * i for i in range(100)]\nr = await park()\nf'{r} {sum(data)}'";
            engine
                .run(script, &registry, &policy, &Approval::auto(ToolRisk::Safe))
                .await
        });
    }
    let deadline = Instant::now() + Duration::from_secs(120);
    while park.arrived.load(Ordering::SeqCst) < CHAINS {
        assert!(Instant::now() < deadline, "the chains did not all park");
        if let Some(early) = tasks.try_join_next() {
            panic!("a chain answered before it was released: {early:?}");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let parked = pss_kib();
    park.released.store(true, Ordering::SeqCst);
    park.release.notify_waiters();
    while let Some(result) = tasks.join_next().await {
        let result = result.expect("a chain task");
        assert!(result.is_ok(), "{result:?}");
    }
    // The housekeeper drops the finished chains' stores: their slots reset.
    tokio::time::sleep(Duration::from_secs(1)).await;
    parked
}

/// The PSS (KiB) a parked CPython chain adds, on slots a chain used before
/// (where a reset that makes every page resident shows), and whether the
/// engine keeps freed slots' written pages.
async fn kib_per_parked_chain() -> (f64, bool) {
    let start = Instant::now();
    let engine = Engine::with_config(EngineConfig {
        max_concurrent_chains: CHAINS as u32,
        max_warm_sessions: 0,
        ..EngineConfig::default()
    })
    .expect("an engine");
    let started = start.elapsed();
    assert!(engine.capacity().cpython as usize >= CHAINS, "{:?}", engine.capacity());
    engine.prepare_cpython().await.expect("the CPython guest");
    println!(
        "engine start {started:.2?} (the process's first: with the probe), CPython guest ready after {:.2?}",
        start.elapsed()
    );
    let warm = engine
        .run(
            "1 + 1",
            &ToolRegistry::new(),
            &ChainPolicy {
                python: PythonChoice::Cpython,
                ..ChainPolicy::default()
            },
            &Approval::deny_all(),
        )
        .await;
    assert!(warm.is_ok(), "{warm:?}");
    tokio::time::sleep(Duration::from_secs(1)).await;
    let before = pss_kib();
    round(&engine).await;
    let parked = round(&engine).await;
    ((parked - before) / CHAINS as f64, engine.keeps_written_pages())
}

/// The measurement, alone in a process of this test binary (the test
/// below runs it): it reads the whole process's PSS, which other tests
/// running beside it in one process would add to.
#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "run alone by a_parked_cpython_chain_on_a_reused_slot_adds_about_the_pages_it_wrote"]
async fn measure_per_parked_chain() {
    let (kib, keeps) = kib_per_parked_chain().await;
    println!("measured: {kib:.0} {keeps}");
}

#[cfg(target_os = "linux")]
#[test]
fn a_parked_cpython_chain_on_a_reused_slot_adds_about_the_pages_it_wrote() {
    let exe = std::env::current_exe().expect("the test binary");
    let out = std::process::Command::new(exe)
        .args([
            "resident::measure_per_parked_chain",
            "--exact",
            "--ignored",
            "--nocapture",
        ])
        .args(["--test-threads", "1"])
        .output()
        .expect("the test binary runs");
    let text = String::from_utf8_lossy(&out.stdout);
    let measured = text
        .lines()
        .find_map(|l| l.split_once("measured: ").map(|(_, m)| m))
        .and_then(|m| m.split_once(' '))
        .and_then(|(kib, keeps)| Some((kib.parse::<f64>().ok()?, keeps.to_owned())));
    let Some((kib, keeps)) = measured else {
        panic!(
            "the measurement printed nothing: {text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    println!(
        "{}: {kib:.0} KiB PSS per parked CPython chain (keeps written pages: {keeps})",
        env!("CARGO_PKG_NAME")
    );
    assert!(kib < MAX_KIB_PER_CHAIN, "{kib:.0} KiB per chain");
}
