//! Real scripts through the real sandbox: each test is one behaviour of a chain.

use std::time::{Duration, Instant};

use chainbox::digest::args_digest;
use chainbox::{CallStatus, ChainPolicy, ChainStatus, ErrorKind};
use serde_json::json;

use crate::fixtures::{run, run_with, unchecked};

#[tokio::test(flavor = "multi_thread")]
async fn sequential_calls_return_the_final_expression_and_a_record_each() {
    let r = run("a = await add(a=1, b=2)\nb = await add(a=a, b=10)\nc = await echo(text='hi')\n[a, b, c]").await;
    assert_eq!(r.status, ChainStatus::Ok, "{r:?}");
    assert_eq!(r.output, json!([3.0, 13.0, "hi"]));
    assert_eq!(r.tool_calls, 3);
    assert!(r.call_trace.iter().all(|c| c.status == CallStatus::Ok));
    let expected = args_digest(json!({"a": 1, "b": 2}).as_object().unwrap());
    assert_eq!(r.call_trace[0].args_digest, expected);
}

#[tokio::test(flavor = "multi_thread")]
async fn positional_arguments_map_onto_schema_properties_in_order() {
    let r = run("await add(5, 7)").await;
    assert_eq!(r.output, json!(12.0), "{r:?}");
    let expected = args_digest(json!({"a": 5, "b": 7}).as_object().unwrap());
    assert_eq!(r.call_trace[0].args_digest, expected);
}

#[tokio::test(flavor = "multi_thread")]
async fn gathered_calls_run_concurrently_on_the_host() {
    let one = Instant::now();
    let r = run("await sleep(seconds=0.5)").await;
    let one = one.elapsed();
    assert!(r.is_ok(), "{r:?}");
    let four = Instant::now();
    let r = run("import asyncio\nawait asyncio.gather(sleep(seconds=0.5), sleep(seconds=0.5), sleep(seconds=0.5), sleep(seconds=0.5))").await;
    let four = four.elapsed();
    assert!(r.is_ok(), "{r:?}");
    assert_eq!(r.tool_calls, 4);
    assert!(
        four.as_secs_f64() < one.as_secs_f64() * 1.5,
        "four gathered calls took {four:?}, one took {one:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn script_error_reports_type_message_and_line() {
    let r = run("x = await add(a=1, b=2)\ny = 0\nx / y").await;
    assert_eq!(r.status, ChainStatus::Error);
    let e = r.error.as_ref().unwrap();
    assert_eq!(e.kind, ErrorKind::Script);
    assert_eq!(e.error_type, "ZeroDivisionError");
    assert!(e.message.contains("division"), "{e:?}");
    assert_eq!(e.line, Some(3));
    assert_eq!(r.tool_calls, 1, "the call before the error stays in the trace");
}

#[tokio::test(flavor = "multi_thread")]
async fn syntax_error_is_a_compile_error() {
    let r = run("def f(:\n  pass").await;
    assert_eq!(r.error_kind(), Some(ErrorKind::Compile), "{r:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn tool_error_is_a_catchable_runtime_error() {
    let r = run("try:\n    await fail(message='boom')\nexcept RuntimeError as e:\n    r = str(e)\nr").await;
    assert_eq!(r.output, json!("boom"), "{r:?}");
    assert_eq!(r.call_trace[0].status, CallStatus::Error);
}

#[tokio::test(flavor = "multi_thread")]
async fn forgetting_await_gets_an_error_that_says_so() {
    let r = run("x = add(a=1, b=2)\nx + 1").await;
    let e = r.error.as_ref().expect("an error");
    assert!(e.message.contains("await"), "{e:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn infinite_loop_is_stopped_by_the_cpu_limit_with_earlier_records_intact() {
    let policy = ChainPolicy {
        max_cpu_s: 0.5,
        ..ChainPolicy::default()
    };
    let r = run_with(
        "await add(a=1, b=2)\nawait echo(text='x')\nwhile True:\n    pass",
        &policy,
    )
    .await;
    assert_eq!(r.error_kind(), Some(ErrorKind::Cpu), "{r:?}");
    assert_eq!(r.tool_calls, 2);
    assert!(r.call_trace.iter().all(|c| c.status == CallStatus::Ok));
}

#[tokio::test(flavor = "multi_thread")]
async fn memory_bomb_is_stopped_with_kind_memory() {
    let policy = ChainPolicy {
        max_memory_bytes: 64 * 1024 * 1024,
        ..ChainPolicy::default()
    };
    let r = run_with("x = ['a' * 1000]\nwhile True:\n    x = x + x", &policy).await;
    assert_eq!(r.error_kind(), Some(ErrorKind::Memory), "{r:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn stdout_flood_is_truncated_at_the_limit() {
    let policy = ChainPolicy {
        max_stdout_bytes: 1000,
        ..ChainPolicy::default()
    };
    let r = run_with("for i in range(10000):\n    print('line', i)\n'done'", &policy).await;
    assert!(r.is_ok(), "{r:?}");
    assert!(r.stdout.len() <= 1000);
    assert!(r.stdout.starts_with("line 0\n"));
    assert!(r.usage.stdout_truncated);
    assert!(r.usage.stdout_bytes > 10_000);
}

#[tokio::test(flavor = "multi_thread")]
async fn host_files_cannot_be_read() {
    let r = run(
        "try:\n    open('/etc/passwd').read()\n    r = 'read it'\nexcept OSError as e:\n    r = type(e).__name__\nr",
    )
    .await;
    assert!(r.is_ok(), "{r:?}");
    assert_ne!(r.output, json!("read it"));
}

#[tokio::test(flavor = "multi_thread")]
async fn workspace_parent_cannot_be_read() {
    let r = run("from pathlib import Path\ntry:\n    r = list(Path('/workspace/../').iterdir())\nexcept OSError as e:\n    r = 'refused'\nr").await;
    assert!(r.is_ok(), "{r:?}");
    assert_eq!(r.output, json!("refused"));
}

#[tokio::test(flavor = "multi_thread")]
async fn workspace_files_round_trip() {
    let r =
        run("from pathlib import Path\nPath('/workspace/a.txt').write_text('hello')\nopen('/workspace/a.txt').read()")
            .await;
    assert_eq!(r.output, json!("hello"), "{r:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn environment_is_empty() {
    let r = run("import os\n[os.getenv('HOME'), os.getenv('PATH'), len(os.environ)]").await;
    assert_eq!(r.output, json!([null, null, 0]), "{r:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn total_timeout_fires_while_a_tool_runs_and_keeps_the_trace() {
    let policy = ChainPolicy {
        total_timeout_s: 0.5,
        ..ChainPolicy::default()
    };
    let started = Instant::now();
    let r = run_with("await add(a=1, b=1)\nawait sleep(seconds=30)", &policy).await;
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(r.status, ChainStatus::Timeout, "{r:?}");
    assert_eq!(r.error_kind(), Some(ErrorKind::Timeout));
    assert_eq!(r.tool_calls, 2);
    assert_eq!(r.call_trace[0].status, CallStatus::Ok);
    assert_eq!(r.call_trace[1].tool, "sleep");
    assert_eq!(r.call_trace[1].status, CallStatus::Timeout);
}

#[tokio::test(flavor = "multi_thread")]
async fn call_past_the_budget_ends_the_chain_uncatchably() {
    let policy = ChainPolicy {
        max_tool_calls: 3,
        ..ChainPolicy::default()
    };
    let r = run_with(
        "for i in range(10):\n    try:\n        await noop()\n    except Exception:\n        pass\n'never'",
        &policy,
    )
    .await;
    assert_eq!(r.error_kind(), Some(ErrorKind::ToolBudget), "{r:?}");
    assert_eq!(r.tool_calls, 3);
}

#[tokio::test(flavor = "multi_thread")]
async fn unknown_name_is_a_name_error() {
    // What the run does; the check before it refuses the script
    // (tests/it/check.rs).
    let r = run_with("await get_wether(city='Paris')", &unchecked()).await;
    let e = r.error.as_ref().expect("error");
    assert_eq!(e.error_type, "NameError", "{e:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn total_timeout_stops_a_cpu_bound_script_even_below_the_cpu_limit() {
    let policy = ChainPolicy {
        total_timeout_s: 0.3,
        max_cpu_s: 30.0,
        ..ChainPolicy::default()
    };
    let started = Instant::now();
    let r = run_with("await noop()\nwhile True:\n    pass", &policy).await;
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "took {:?}",
        started.elapsed()
    );
    assert_eq!(r.status, ChainStatus::Timeout, "{r:?}");
    assert_eq!(r.tool_calls, 1);
    assert_eq!(r.call_trace[0].status, CallStatus::Ok);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_trivial_chain_does_not_grow_the_guest_memory() {
    // The guest starts with ~4 MB of linear memory (2 MiB shadow stack,
    // guest/runtime/build.rs; 1.8 MB data image, a little heap). The
    // parser's stack-growth helper used to allocate a fresh 1 MiB stack per
    // parse on wasm (stacker could not see the stack limit there), growing
    // every chain by that much; see guest/vendor/stacker/src/backends/wasm.rs.
    let r = run("1 + 1").await;
    assert_eq!(r.status, ChainStatus::Ok, "{r:#?}");
    assert!(
        r.usage.peak_memory_bytes < 4_600_000,
        "peak {} bytes: the guest grew its memory for `1 + 1`",
        r.usage.peak_memory_bytes
    );
}

#[test]
fn a_new_engine_caches_the_pre_initialised_guest_it_starts_chains_from() {
    // src/snapshot.rs: a cold cache compiles the plain guest, runs its
    // `chainbox_warm` export and caches the rewritten module; if that
    // silently failed, chains would start from the plain guest (slower).
    let dir = tempfile::tempdir().expect("temp dir");
    let engine = chainbox::Engine::with_config(chainbox::EngineConfig {
        cache_dir: Some(dir.path().to_path_buf()),
        max_concurrent_chains: 2,
        ..Default::default()
    })
    .expect("engine");
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .expect("cache dir")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .collect();
    assert!(
        names
            .iter()
            .any(|n| n.starts_with("chainbox-guest-warm-") && n.ends_with(".cwasm")),
        "{names:?}"
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let (registry, policy) = (chainbox::ToolRegistry::new(), ChainPolicy::default());
    let r = runtime.block_on(engine.run("sorted({3, 1, 2})", &registry, &policy, &chainbox::Approval::deny_all()));
    assert_eq!(r.output, json!([1, 2, 3]), "{r:?}");
}

// JSON crosses the boundary as Python's `json` would carry it: insertion
// order kept, integers of any size exact. Compared as text, since
// `serde_json::Value`'s `==` ignores key order.

/// `data()`: a result in a non-sorted key order with integers beyond 64 bits.
fn data_registry() -> chainbox::ToolRegistry {
    let data = crate::fixtures::tool("data", &[], |_| {
        serde_json::from_str(
            r#"{"zeta": 1, "alpha": {"n": 1180591620717411303424, "m": -1180591620717411303424}, "f": 1.5}"#,
        )
        .map_err(|e| e.to_string())
    });
    let echo = crate::fixtures::tool("echo", &["text"], |a| Ok(a.get("text").cloned().unwrap_or_default()));
    chainbox::ToolRegistry::from_local([
        std::sync::Arc::new(data) as std::sync::Arc<dyn chainbox::Tool>,
        std::sync::Arc::new(echo),
    ])
    .expect("registry")
}

async fn run_data(script: &str, policy: &ChainPolicy) -> chainbox::ChainRunResult {
    crate::fixtures::engine()
        .run(
            script,
            &data_registry(),
            policy,
            &chainbox::Approval::auto(chainbox::ToolRisk::Safe),
        )
        .await
}

fn json_text(v: &serde_json::Value) -> String {
    serde_json::to_string(v).expect("json")
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_result_keeps_its_key_order_and_exact_integers() {
    let r = run_data(
        "d = await data()\n[list(d), d['alpha']['n'] == 2**70, type(d['alpha']['n']).__name__, d]",
        &ChainPolicy::default(),
    )
    .await;
    assert!(r.is_ok(), "{r:?}");
    assert_eq!(
        json_text(&r.output),
        r#"[["zeta","alpha","f"],true,"int",{"zeta":1,"alpha":{"n":1180591620717411303424,"m":-1180591620717411303424},"f":1.5}]"#
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_output_keeps_insertion_order_and_exact_integers() {
    let r = run("{'b': 1, 'a': 2**70, 'c': [2**64, -2**63 - 1, 1.0]}").await;
    assert!(r.is_ok(), "{r:?}");
    assert_eq!(
        json_text(&r.output),
        r#"{"b":1,"a":1180591620717411303424,"c":[18446744073709551616,-9223372036854775809,1.0]}"#
    );
    assert_eq!(
        r.output_text,
        "{'b': 1, 'a': 1180591620717411303424, 'c': [18446744073709551616, -9223372036854775809, 1.0]}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn arguments_reach_the_tool_in_order_with_exact_integers() {
    let r = run_data(
        "await echo(text={'z': 1, 'a': 2**70, 'm': {'y': 2, 'b': 3}})",
        &ChainPolicy::default(),
    )
    .await;
    assert!(r.is_ok(), "{r:?}");
    assert_eq!(
        json_text(&r.output),
        r#"{"z":1,"a":1180591620717411303424,"m":{"y":2,"b":3}}"#
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_offloaded_result_loads_back_in_order_and_offloaded_output_keeps_it() {
    let policy = ChainPolicy {
        max_inline_result_bytes: 16,
        ..ChainPolicy::default()
    };
    let r = run_data(
        "h = await data()\nv = load_artifact(h)\n[list(v), v['alpha']['m']]",
        &policy,
    )
    .await;
    assert!(r.is_ok(), "{r:?}");
    // The output itself is over the inline limit: a handle, whose stored
    // value keeps the order too.
    let handle: chainbox::ArtifactRef = r.output["artifact_ref"]
        .as_str()
        .and_then(|h| h.parse().ok())
        .expect("an offloaded output");
    let stored = crate::fixtures::engine()
        .artifacts()
        .get(&handle)
        .expect("store")
        .expect("stored output");
    assert_eq!(
        String::from_utf8_lossy(&stored.bytes),
        r#"[["zeta","alpha","f"],-1180591620717411303424]"#
    );
}

#[test]
fn cpu_time_is_each_chains_own_when_more_chains_than_cores_run() {
    // Twice as many threads as cores, each running one CPU-bound chain: the
    // OS shares the cores among them, so each chain's wall time spans about
    // the whole run while its own CPU time is a share of it. `cpu_ms` (and
    // `max_cpu_s`) must count the latter: the chains' CPU times cannot add
    // up to more than the cores gave in that time, where their wall times
    // would add up to about twice that. (A bound the machine enforces, so
    // a noisy host cannot break it, unlike a comparison with a chain run
    // alone.)
    let script = "n = 0\nfor i in range(4_000_000):\n    n += i\nn";
    let run_alone = || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        runtime.block_on(run(script))
    };
    let warm = run_alone();
    assert!(warm.is_ok(), "{warm:?}");
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let threads = cores * 2;
    let started = std::time::Instant::now();
    let together: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads).map(|_| s.spawn(run_alone)).collect();
        handles.into_iter().map(|h| h.join().expect("thread")).collect()
    });
    let given_ms = started.elapsed().as_secs_f64() * 1e3 * cores as f64;
    for r in &together {
        assert!(r.is_ok(), "{r:?}");
        assert!(r.usage.cpu_ms > 0.0, "{r:?}");
    }
    let cpu_ms: f64 = together.iter().map(|r| r.usage.cpu_ms).sum();
    assert!(
        cpu_ms <= given_ms * 1.05,
        "{threads} chains on {cores} cores counted {cpu_ms:.0} ms of CPU in all, \
         more than the {given_ms:.0} ms the cores had (wall time counted as CPU?)"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_invalid_in_code_policy_is_refused_naming_the_field() {
    let policy = ChainPolicy {
        call_timeout_s: -1.0,
        ..ChainPolicy::default()
    };
    let r = run_with("await noop()", &policy).await;
    assert_eq!(r.status, ChainStatus::Error);
    let e = r.error.as_ref().expect("error");
    assert_eq!(e.kind, ErrorKind::Policy, "{e:?}");
    assert!(e.message.contains("call_timeout_s"), "{e:?}");
    assert!(r.call_trace.is_empty(), "nothing ran");
}

/// A chain, the housekeeper dropping the last chain's store and the
/// housekeeper making the next spare all allocate from one pool: back to
/// back on a one-slot engine, every chain starts (a pool sized to the
/// chains alone filled with slots awaiting decommit, and a chain lost the
/// race for the flush to the spare: "maximum concurrent limit … reached").
#[test]
fn chains_back_to_back_on_a_one_slot_engine_all_start() {
    let engine = chainbox::Engine::with_config(chainbox::EngineConfig {
        max_concurrent_chains: 1,
        ..Default::default()
    })
    .expect("engine");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let (registry, policy) = (chainbox::ToolRegistry::new(), ChainPolicy::default());
    let approval = chainbox::Approval::deny_all();
    for i in 0..400 {
        let r = runtime.block_on(engine.run("1 + 1", &registry, &policy, &approval));
        assert_eq!(r.output, json!(2), "chain {i}: {r:?}");
    }
}

/// The next monty instance is made before its chain, under no chain's
/// limits: a chain whose memory limit is below what the guest starts with
/// fails as a fresh instance would, not on the spare, and the next chain
/// runs.
#[tokio::test(flavor = "multi_thread")]
async fn a_memory_limit_below_montys_start_is_an_error_not_a_spare() {
    let tiny = ChainPolicy {
        max_memory_bytes: 64 << 10,
        ..ChainPolicy::default()
    };
    let r = run_with("1 + 1", &tiny).await;
    assert_eq!(r.status, ChainStatus::Error, "{r:#?}");
    assert_eq!(r.interpreter, chainbox::Interpreter::Monty);
    let ok = run("1 + 1").await;
    assert!(ok.is_ok(), "{ok:?}");
    assert!(ok.usage.peak_memory_bytes > 64 << 10, "{:?}", ok.usage);
}
