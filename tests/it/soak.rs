//! Soak test: many chains through one engine, checking that nothing
//! accumulates. Ignored by default; run it alone (the `soak::` filter: it
//! measures the whole process, RSS, fds and the temp dir) with
//!
//! ```sh
//! cargo test --release --test it soak:: -- --ignored --nocapture
//! ```
//!
//! `CHAINBOX_SOAK_CHAINS` (default 100000) sets how many chains run after a
//! warm-up (`CHAINBOX_SOAK_WARMUP`, default 1000, run at twice the concurrency), `CHAINBOX_SOAK_CONCURRENCY`
//! (default 32) how many are in flight, `CHAINBOX_SOAK_SLOTS` the engine's
//! pool size (default: the engine's default).
//! The mix covers success, script and compile errors, tool errors, denials,
//! workspace files, media files, offloaded results, and every limit kill
//! (memory, CPU, total timeout, output, tool budget). Each chain's outcome is
//! checked against its scenario. The test prints RSS, open fds and leftover
//! workspace directories after the warm-up, at the middle and at the end, and
//! asserts RSS grows less than 10 %, no fd leaks and no directory is left.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use chainbox::{
    Approval, ChainPolicy, ChainRunResult, Engine, EngineConfig, ErrorKind, MemoryArtifactStore, ToolRegistry, ToolRisk,
};
use serde_json::{Value, json};
use tokio::sync::Semaphore;

use crate::fixtures::{ChartTool, SleepTool, add_tool, delete_tool, echo_tool, fail_tool, fn_tool, tool};

/// Chains run before the first measurement (override: `CHAINBOX_SOAK_WARMUP`),
/// at twice the concurrency, so code pages, the allocator and the pool slots
/// are warm: the engine's pool keeps each slot it has used warm (its table,
/// fiber stack pages) and takes a fresh one whenever more chains run on a
/// thread's shard than ever before, so its resident size climbs in steps to
/// a high-water mark that warming up above the concurrency puts behind us.
const WARM_UP: usize = 1000;

/// Chains between two collections of released artifacts.
const GC_EVERY: usize = 100;

fn registry() -> ToolRegistry {
    // A result above max_inline_result_bytes: offloaded to the artifact store.
    let big = fn_tool("big", &["n", "tag"], |a| {
        let n = a.get("n").and_then(Value::as_u64).unwrap_or(1000) as usize;
        Ok(json!({"tag": a.get("tag").cloned(), "data": "x".repeat(n)}))
    });
    let strict = tool("strict", &["n"], |a| Ok(a.get("n").cloned().unwrap_or(Value::Null)))
        .with_schema(json!({"type": "object", "required": ["n"], "properties": {"n": {"type": "integer"}}}));
    ToolRegistry::from_local([
        add_tool(),
        echo_tool(),
        fail_tool(),
        big,
        delete_tool(),
        Arc::new(strict),
        Arc::new(SleepTool),
        Arc::new(ChartTool),
    ])
    .expect("registry")
}

/// One kind of chain in the mix and the outcome it must have.
struct Scenario {
    name: &'static str,
    /// How many of every `CYCLE` chains run it.
    weight: usize,
    script: fn(usize) -> String,
    policy: fn() -> ChainPolicy,
    /// `None`: the chain succeeds.
    expect: Option<ErrorKind>,
}

fn default_policy() -> ChainPolicy {
    ChainPolicy::default()
}

fn scenarios() -> Vec<Scenario> {
    vec![
        Scenario {
            name: "sequential calls",
            weight: 10,
            script: |i| format!("a = await add(a={i}, b=1)\nb = await echo(text='hi')\n[a, b]"),
            policy: default_policy,
            expect: None,
        },
        Scenario {
            name: "gathered calls",
            weight: 4,
            script: |i| format!("import asyncio\nawait asyncio.gather(add({i}, 2), echo('x'), sleep(seconds=0.001))"),
            policy: default_policy,
            expect: None,
        },
        Scenario {
            name: "pure computation",
            weight: 3,
            script: |i| format!("sum(x * x for x in range({}))", 100 + i % 1000),
            policy: default_policy,
            expect: None,
        },
        Scenario {
            name: "script error",
            weight: 2,
            script: |i| format!("x = await add(a={i}, b=0)\nx / 0"),
            policy: default_policy,
            expect: Some(ErrorKind::Script),
        },
        Scenario {
            name: "compile error",
            weight: 1,
            script: |_| "def f(:\n  pass".into(),
            policy: default_policy,
            expect: Some(ErrorKind::Compile),
        },
        Scenario {
            name: "tool error",
            weight: 2,
            script: |i| format!("await fail(message='boom {i}')"),
            policy: default_policy,
            expect: Some(ErrorKind::Script),
        },
        Scenario {
            name: "caught tool error, denial, bad arguments",
            weight: 2,
            script: |i| {
                format!(
                    "out = []\n\
                     for call in [fail(message='x{i}'), delete(path='/'), strict(n='no')]:\n    \
                         try:\n        await call\n    except (RuntimeError, PermissionError, ValueError) as e:\n        \
                             out.append(type(e).__name__)\n\
                     out"
                )
            },
            policy: default_policy,
            expect: None,
        },
        Scenario {
            name: "workspace files",
            weight: 2,
            script: |i| {
                format!(
                    "from pathlib import Path\nPath('/workspace/a.txt').write_text('hello {i}')\nopen('/workspace/a.txt').read()"
                )
            },
            policy: default_policy,
            expect: None,
        },
        Scenario {
            name: "media file",
            weight: 1,
            script: |_| "c = await chart()\nlen(open(c['files'][0]['path'], 'rb').read())".into(),
            policy: default_policy,
            expect: None,
        },
        Scenario {
            name: "offloaded results",
            weight: 2,
            script: |i| format!("h = await big(n=6000, tag={i})\nv = load_artifact(h)\n[v['tag'], 'y' * 5000]"),
            policy: default_policy,
            expect: None,
        },
        Scenario {
            name: "stdout flood",
            weight: 1,
            script: |_| "for i in range(2000):\n    print('line', i)\n'done'".into(),
            policy: || ChainPolicy {
                max_stdout_bytes: 1000,
                ..ChainPolicy::default()
            },
            expect: None,
        },
        Scenario {
            name: "memory kill",
            weight: 1,
            script: |_| "x = ['a' * 1000]\nwhile True:\n    x = x + x".into(),
            policy: || ChainPolicy {
                max_memory_bytes: 32 * 1024 * 1024,
                ..ChainPolicy::default()
            },
            expect: Some(ErrorKind::Memory),
        },
        Scenario {
            name: "cpu kill",
            weight: 1,
            script: |_| "await add(a=1, b=2)\nwhile True:\n    pass".into(),
            policy: || ChainPolicy {
                max_cpu_s: 0.05,
                ..ChainPolicy::default()
            },
            expect: Some(ErrorKind::Cpu),
        },
        Scenario {
            name: "total timeout in a tool",
            weight: 1,
            script: |_| "await sleep(seconds=5)".into(),
            policy: || ChainPolicy {
                total_timeout_s: 0.05,
                ..ChainPolicy::default()
            },
            expect: Some(ErrorKind::Timeout),
        },
        Scenario {
            name: "output limit",
            weight: 1,
            script: |_| "'x' * 20000".into(),
            policy: || ChainPolicy {
                max_result_bytes: 10_000,
                ..ChainPolicy::default()
            },
            expect: Some(ErrorKind::OutputLimit),
        },
        Scenario {
            name: "tool budget",
            weight: 1,
            script: |_| "for i in range(10):\n    await add(a=i, b=i)".into(),
            policy: || ChainPolicy {
                max_tool_calls: 3,
                ..ChainPolicy::default()
            },
            expect: Some(ErrorKind::ToolBudget),
        },
    ]
}

/// The scenario of chain `i`: a fixed interleaving of the weighted mix.
fn pick(scenarios: &[Scenario], i: usize) -> usize {
    let total: usize = scenarios.iter().map(|s| s.weight).sum();
    // A stride coprime with the total visits every slot once per cycle
    // while interleaving the kinds.
    let gcd = |mut a: usize, mut b: usize| {
        while b != 0 {
            (a, b) = (b, a % b);
        }
        a
    };
    let stride = [11, 13, 17, 19, 23]
        .into_iter()
        .find(|&p| gcd(p, total) == 1)
        .unwrap_or(1);
    let mut k = (i * stride) % total;
    for (n, s) in scenarios.iter().enumerate() {
        if k < s.weight {
            return n;
        }
        k -= s.weight;
    }
    unreachable!("k < total")
}

/// A field of /proc/self/status, in KiB.
fn status_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("{field} in /proc/self/status"))
}

fn rss_kib() -> u64 {
    status_kib("VmRSS")
}

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").expect("/proc/self/fd").count()
}

/// Workspace directories (`chainbox-ws-*`, see `workspace.rs`) left in `dir`,
/// and everything else left there.
fn leftovers(dir: &Path) -> (usize, usize) {
    let names: Vec<String> = std::fs::read_dir(dir)
        .expect("temp dir")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    let ws = names.iter().filter(|n| n.starts_with("chainbox-ws-")).count();
    (ws, names.len() - ws)
}

struct Soak {
    engine: Engine,
    /// The engine's artifact store, to count what is left in it.
    store: Arc<MemoryArtifactStore>,
    registry: ToolRegistry,
    scenarios: Arc<Vec<Scenario>>,
    policies: Vec<ChainPolicy>,
    concurrency: usize,
    mismatches: AtomicUsize,
    /// Chains run per scenario, for the report.
    counts: Vec<AtomicUsize>,
}

impl Soak {
    /// Runs chains `range` with `concurrency` in flight and waits for all of them.
    async fn run(self: &Arc<Self>, range: std::ops::Range<usize>) {
        let slots = Arc::new(Semaphore::new(self.concurrency));
        let mut tasks = tokio::task::JoinSet::new();
        for i in range {
            let permit = slots.clone().acquire_owned().await.expect("semaphore");
            let soak = self.clone();
            tasks.spawn(async move {
                soak.one(i).await;
                drop(permit);
            });
            // Reap finished tasks as we go so the set stays small.
            while let Some(done) = tasks.try_join_next() {
                done.expect("chain task panicked");
            }
        }
        while let Some(done) = tasks.join_next().await {
            done.expect("chain task panicked");
        }
        // Offloaded results are distinct per chain; an embedder collects
        // them once chains have released them.
        self.engine.artifacts().gc().expect("gc");
    }

    async fn one(&self, i: usize) {
        let n = pick(&self.scenarios, i);
        let s = &self.scenarios[n];
        let r: ChainRunResult = self
            .engine
            .run(
                &(s.script)(i),
                &self.registry,
                &self.policies[n],
                &Approval::auto(ToolRisk::Safe),
            )
            .await;
        self.counts[n].fetch_add(1, Ordering::Relaxed);
        // Offloaded results are distinct per chain and stay in the store
        // until collected, as an embedder would do now and then. Collecting
        // only between phases let ~6 MB pile up per 10k chains, which the
        // allocator then kept as RSS.
        if i.is_multiple_of(GC_EVERY) {
            self.engine.artifacts().gc().expect("gc");
        }
        if r.error_kind() != s.expect {
            let seen = self.mismatches.fetch_add(1, Ordering::Relaxed);
            if seen < 10 {
                eprintln!(
                    "chain {i} ({}): expected {:?}, got {:?}: {:?}",
                    s.name,
                    s.expect,
                    r.error_kind(),
                    r.error
                );
            }
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Snapshot {
    chains: usize,
    secs: f64,
    rss_kib: u64,
    fds: usize,
    ws_dirs: usize,
    other_files: usize,
}

#[test]
#[ignore = "long: run alone with `cargo test --release --test it soak:: -- --ignored --nocapture`"]
fn soak_many_chains_leak_nothing() {
    let chains: usize = std::env::var("CHAINBOX_SOAK_CHAINS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let concurrency: usize = std::env::var("CHAINBOX_SOAK_CONCURRENCY")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(32);
    // The engine's default pool unless `CHAINBOX_SOAK_SLOTS` says otherwise.
    let slots: u32 = std::env::var("CHAINBOX_SOAK_SLOTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(EngineConfig::default().max_concurrent_chains);
    let warm_up: usize = std::env::var("CHAINBOX_SOAK_WARMUP")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(WARM_UP);

    // A private temp dir, so leftover workspaces are ours to count and
    // other processes' temp files do not blur the figure.
    let tmp: PathBuf = std::env::temp_dir().join(format!("chainbox-soak-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).expect("soak temp dir");
    // SAFETY: set before the runtime and the engine exist; run as documented
    // above, this is the only test the binary runs, on this thread, and
    // nothing else reads the environment yet.
    unsafe { std::env::set_var("TMPDIR", &tmp) };
    assert_eq!(std::env::temp_dir(), tmp);

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let scenarios = scenarios();
    let store = Arc::new(MemoryArtifactStore::new());
    let mut soak = Arc::new(Soak {
        engine: Engine::with_config(EngineConfig {
            artifacts: Some(store.clone()),
            max_concurrent_chains: slots,
            ..EngineConfig::default()
        })
        .expect("engine"),
        store,
        registry: registry(),
        policies: scenarios.iter().map(|s| (s.policy)()).collect(),
        counts: scenarios.iter().map(|_| AtomicUsize::new(0)).collect(),
        scenarios: Arc::new(scenarios),
        concurrency,
        mismatches: AtomicUsize::new(0),
    });

    let started = Instant::now();
    let snapshot = |chains: usize| {
        let (ws_dirs, other_files) = leftovers(&tmp);
        let s = Snapshot {
            chains,
            secs: started.elapsed().as_secs_f64(),
            rss_kib: rss_kib(),
            fds: open_fds(),
            ws_dirs,
            other_files,
        };
        // The split says where growth is: heap and pool slots (anon), the
        // mapped guest code (file), copy-on-write memory images (shmem).
        println!(
            "soak: {:>7} chains  {:>8.1} s  RSS {:>7} KiB (anon {}, file {}, shmem {})  fds {:>4}  \
             workspace dirs left {}  other temp entries {}",
            s.chains,
            s.secs,
            s.rss_kib,
            status_kib("RssAnon"),
            status_kib("RssFile"),
            status_kib("RssShmem"),
            s.fds,
            s.ws_dirs,
            s.other_files
        );
        s
    };

    let measured = soak.concurrency;
    Arc::get_mut(&mut soak).expect("no chain running").concurrency = 2 * measured;
    runtime.block_on(soak.run(0..warm_up));
    Arc::get_mut(&mut soak).expect("no chain running").concurrency = measured;
    let warm = snapshot(0);
    // Ten steps, so progress (and any trend) shows while it runs.
    let mut done = 0;
    let mut middle = warm;
    for step in 1..=10 {
        let next = chains * step / 10;
        runtime.block_on(soak.run(warm_up + done..warm_up + next));
        done = next;
        let s = snapshot(done);
        if step == 5 {
            middle = s;
        }
    }
    let end = snapshot(done);
    let elapsed = end.secs - warm.secs;
    println!(
        "soak: {chains} chains in {elapsed:.1} s ({:.0} chains/s, {concurrency} in flight, {slots} slots, {warm_up} warm-up)",
        chains as f64 / elapsed.max(1e-9)
    );
    for (s, n) in soak.scenarios.iter().zip(&soak.counts) {
        println!("soak:   {:>6} × {}", n.load(Ordering::Relaxed), s.name);
    }
    let growth = (end.rss_kib as f64 - warm.rss_kib as f64) / warm.rss_kib as f64 * 100.0;
    println!(
        "soak: RSS start {} KiB, middle {} KiB, end {} KiB ({growth:+.1} %); fds {} → {} → {}; \
         workspace dirs left {}; artifacts left {}",
        warm.rss_kib,
        middle.rss_kib,
        end.rss_kib,
        warm.fds,
        middle.fds,
        end.fds,
        end.ws_dirs,
        soak.store.len()
    );

    let mismatches = soak.mismatches.load(Ordering::Relaxed);
    let artifacts_left = soak.store.len();
    drop(soak);
    drop(runtime);
    let _ = std::fs::remove_dir(&tmp);
    assert_eq!(mismatches, 0, "chains whose outcome did not match their scenario");
    assert!(growth < 10.0, "RSS grew {growth:.1} % over {chains} chains");
    // A little slack for runtime internals; a per-chain leak would show as
    // thousands.
    assert!(end.fds <= warm.fds + 2, "fds grew from {} to {}", warm.fds, end.fds);
    assert_eq!(end.ws_dirs, 0, "workspace directories left behind");
    assert_eq!(end.other_files, 0, "files left in the temp dir");
    assert_eq!(artifacts_left, 0, "artifacts still pinned after every chain ended");
}
