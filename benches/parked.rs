//! Memory at scale: resident memory with 1,000 and 10,000 chains parked at
//! once on a slow tool (each chain's guest is alive, mid-call).
//!
//! `cargo bench --bench parked` prints, per level, the process RSS and PSS
//! before the chains start, while they are parked, and after they
//! finished, plus the increase per parked chain; and the mappings, threads
//! and descriptors they hold. Not a criterion bench: the figure is a size,
//! not a time. `CHAINBOX_PARKED=1000,10000` picks the levels;
//! `CHAINBOX_PARKED_HOLD_S=30` keeps each level parked that long (to read
//! `/proc/<pid>/smaps` meanwhile); `CHAINBOX_PARKED_PYTHON=cpython` parks
//! chains of the CPython guest instead of monty.
//!
//! A level above what the process's budgets hold of the guest
//! (`Engine::capacity`) parks that many; the rest wait for a slot, and
//! once the parked ones are released every chain runs through. The level
//! passes when every chain has answered `ok` and the process is alive.

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

/// Parks until released, counting the chains that reached it; once
/// released, answers at once (the chains that waited for a slot).
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
        // Registered before the flag is read: a release in between wakes it.
        released.as_mut().enable();
        self.arrived.fetch_add(1, Ordering::SeqCst);
        if !self.released.load(Ordering::SeqCst) {
            released.await;
        }
        Ok(ToolOutput::Value(json!("released")))
    }
}

impl Park {
    fn release(&self) {
        self.released.store(true, Ordering::SeqCst);
        self.release.notify_waiters();
    }
}

/// Mappings, threads and open descriptors of this process.
fn held() -> (u64, u64, u64) {
    let maps = std::fs::read("/proc/self/maps").map_or(0, |m| m.iter().filter(|&&b| b == b'\n').count() as u64);
    let threads = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find_map(|l| l.strip_prefix("Threads:")?.trim().parse().ok()))
        .unwrap_or(0);
    let fds = std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count() as u64);
    (maps, threads, fds)
}

/// Memory of this process, in bytes: (RSS, PSS). RSS counts the guest's
/// data image, mapped copy-on-write from the same page-cache pages in every
/// slot, once per chain; PSS divides shared pages among their users, so it
/// is the memory the chains really take.
fn memory() -> (u64, u64) {
    let rollup = std::fs::read_to_string("/proc/self/smaps_rollup").unwrap_or_default();
    let field = |name: &str| {
        rollup
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map_or(0, |kb| kb * 1024)
    };
    (field("Rss:"), field("Pss:"))
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

/// A script that does a little work before and after its parked call, so
/// the guest's interpreter state is that of a real chain.
const SCRIPT: &str = "data = [i * i for i in range(100)]\nr = await park()\nf'{r} {sum(data)}'";

async fn level(chains: usize) {
    let engine = Engine::with_config(EngineConfig {
        max_concurrent_chains: chains as u32,
        ..EngineConfig::default()
    })
    .expect("engine");
    let park = Arc::new(Park {
        info: ToolInfo::new(
            "park",
            "Waits until the bench releases it.",
            json!({"type": "object", "properties": {}}),
        ),
        arrived: AtomicUsize::new(0),
        released: AtomicBool::new(false),
        release: Notify::new(),
    });
    let registry = ToolRegistry::from_local([park.clone() as Arc<dyn Tool>]).expect("registry");
    let python = match std::env::var("CHAINBOX_PARKED_PYTHON").as_deref() {
        Ok("cpython") => PythonChoice::Cpython,
        _ => PythonChoice::Monty,
    };
    let policy = ChainPolicy {
        total_timeout_s: 600.0,
        call_timeout_s: 600.0,
        python,
        ..ChainPolicy::default()
    };
    let approval = Approval::auto(ToolRisk::Safe);
    let capacity = engine.capacity();
    let fit = match python {
        PythonChoice::Cpython => capacity.cpython,
        _ => capacity.monty,
    } as usize;
    // Warm up the engine so its one-time costs are not counted per chain.
    let warm = engine.run("1", &registry, &policy, &approval).await;
    assert!(warm.is_ok(), "{warm:?}");
    tokio::time::sleep(Duration::from_secs(1)).await;
    let before = memory();
    let held_before = held();
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..chains {
        let (engine, registry, policy, approval) = (engine.clone(), registry.clone(), policy.clone(), approval.clone());
        tasks.spawn(async move { engine.run(SCRIPT, &registry, &policy, &approval).await });
    }
    // As many as hold a slot park; the rest wait for one.
    let parking = chains.min(fit);
    while park.arrived.load(Ordering::SeqCst) < parking {
        if let Some(early) = tasks.try_join_next() {
            panic!("a chain answered before any was released: {early:?}");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let parked_after = started.elapsed();
    let parked = memory();
    let held_parked = held();
    // Keep them parked a while for a look at /proc/<pid>/smaps.
    if let Some(hold) = std::env::var("CHAINBOX_PARKED_HOLD_S")
        .ok()
        .and_then(|s| s.parse().ok())
    {
        tokio::time::sleep(Duration::from_secs_f64(hold)).await;
    }
    park.release();
    let mut ok = 0;
    let mut failed = None;
    while let Some(result) = tasks.join_next().await {
        let result = result.expect("chain task");
        if result.is_ok() {
            ok += 1;
        } else if failed.is_none() {
            failed = Some(result);
        }
    }
    let all_answered = started.elapsed();
    // Stores are dropped after their chains answer (the CPython guest's
    // housekeeper does it): "after" is what stays once that has settled,
    // idle pool slots included.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let after = memory();
    let per_chain = |now: u64, then: u64| now.saturating_sub(then) as f64 / 1024.0 / parking as f64;
    let per = |now: u64, then: u64| now.saturating_sub(then) as f64 / parking as f64;
    println!(
        "{chains:>6} {python:?} chains, capacity {fit} (monty {}, CPython {}): {parking} parked after {parked_after:.2?}, \
         {ok}/{chains} ok after {all_answered:.2?}:\n\
         \x20      mappings {} -> {} (+{:.1} per parked chain), threads {} -> {} (+{:.2}), descriptors {} -> {} (+{:.2})\n\
         \x20      RSS before {:.0} MiB, parked {:.0} MiB (+{:.0} KiB per chain), after {:.0} MiB\n\
         \x20      PSS before {:.0} MiB, parked {:.0} MiB (+{:.0} KiB per chain), after {:.0} MiB",
        capacity.monty,
        capacity.cpython,
        held_before.0,
        held_parked.0,
        per(held_parked.0, held_before.0),
        held_before.1,
        held_parked.1,
        per(held_parked.1, held_before.1),
        held_before.2,
        held_parked.2,
        per(held_parked.2, held_before.2),
        mib(before.0),
        mib(parked.0),
        per_chain(parked.0, before.0),
        mib(after.0),
        mib(before.1),
        mib(parked.1),
        per_chain(parked.1, before.1),
        mib(after.1),
    );
    assert_eq!(
        ok, chains,
        "every chain finishes once released; the first that did not: {failed:?}"
    );
}

fn main() {
    // `cargo bench` passes `--bench`; a filter argument, if any, is ignored.
    let levels: Vec<usize> = std::env::var("CHAINBOX_PARKED")
        .unwrap_or_else(|_| "1000,10000".into())
        .split(',')
        .filter_map(|n| n.trim().parse().ok())
        .collect();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    for chains in levels {
        runtime.block_on(level(chains));
    }
}
