//! CPU attacks: scripts that never stop computing, in Python bytecode and
//! inside native builtins (`sorted`, `str.join`, `"x" * n`), and scripts that
//! sleep instead of computing.

use std::time::{Duration, Instant};

use chainbox::{CallStatus, ChainPolicy, ChainStatus, ErrorKind, PythonChoice};

use crate::fixtures::{
    assert_ended, assert_next_chain_ok, assert_trace, cpu_capped, run_adversarial, run_tight, run_tight_on, tight,
};

#[tokio::test(flavor = "multi_thread")]
async fn tight_loop_is_stopped_by_cpu_limit_with_earlier_records_intact() {
    let r = run_adversarial(
        "await add(a=1, b=2)\nawait echo(text='before')\nwhile True:\n    pass",
        &cpu_capped(),
    )
    .await;
    assert_ended(&r, ChainStatus::Error, ErrorKind::Cpu);
    assert_trace(&r, &[("add", CallStatus::Ok), ("echo", CallStatus::Ok)]);
    assert!(r.usage.cpu_ms >= 300.0, "{:?}", r.usage);
    assert_next_chain_ok().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn huge_range_loop_is_stopped_by_cpu_limit() {
    let r = run_adversarial(
        "await noop()\nx = 0\nfor i in range(10**15):\n    x += i\nx",
        &cpu_capped(),
    )
    .await;
    assert_ended(&r, ChainStatus::Error, ErrorKind::Cpu);
    assert_trace(&r, &[("noop", CallStatus::Ok)]);
    assert_next_chain_ok().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn sorted_of_a_huge_range_ends_with_memory_not_a_hang() {
    let started = Instant::now();
    let r = run_tight("sorted(range(10**9))").await;
    assert_ended(&r, ChainStatus::Error, ErrorKind::Memory);
    assert!(started.elapsed() < Duration::from_secs(3));
    assert_next_chain_ok().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn sorting_repeatedly_in_native_code_is_stopped_by_cpu_limit() {
    let r = run_adversarial(
        "xs = list(range(200000, 0, -1))\nwhile True:\n    ys = sorted(xs)\n    xs = sorted(ys, reverse=True)",
        &cpu_capped(),
    )
    .await;
    assert_ended(&r, ChainStatus::Error, ErrorKind::Cpu);
    assert_next_chain_ok().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn join_of_a_billion_strings_is_refused_as_memory() {
    let r = run_tight("','.join(['x'] * 10**9)").await;
    assert_ended(&r, ChainStatus::Error, ErrorKind::Memory);
    assert_next_chain_ok().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn repeated_join_in_native_code_is_stopped_by_cpu_limit() {
    let r = run_adversarial(
        "parts = ['abc'] * 100000\nwhile True:\n    s = ','.join(parts)\n    n = len(s.split(','))",
        &cpu_capped(),
    )
    .await;
    assert_ended(&r, ChainStatus::Error, ErrorKind::Cpu);
    assert_next_chain_ok().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn string_repetition_of_a_gigabyte_is_refused_as_memory() {
    let r = run_tight("len('x' * 10**9)").await;
    assert_ended(&r, ChainStatus::Error, ErrorKind::Memory);
    assert_next_chain_ok().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn time_sleep_is_bounded_by_the_total_timeout_and_costs_no_cpu() {
    let started = Instant::now();
    let r = run_tight("import time\nawait noop()\ntime.sleep(10**6)\n'woke'").await;
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "took {:?}",
        started.elapsed()
    );
    assert_ended(&r, ChainStatus::Timeout, ErrorKind::Timeout);
    assert_trace(&r, &[("noop", CallStatus::Ok)]);
    assert!(r.usage.cpu_ms < 500.0, "sleeping is not CPU: {:?}", r.usage);
    assert_next_chain_ok().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn asyncio_sleep_is_bounded_by_the_total_timeout() {
    let r = run_tight("import asyncio\nawait asyncio.sleep(10**6)\n'woke'").await;
    assert_ended(&r, ChainStatus::Timeout, ErrorKind::Timeout);
    assert_next_chain_ok().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn sleep_with_absurd_durations_is_a_script_error_not_a_crash() {
    for (arg, expected) in [
        ("-1", "ValueError"),
        ("float('nan')", "ValueError"),
        ("1e308", "OverflowError"),
        ("2 ** 64", "OverflowError"),
        ("10 ** 400", "OverflowError"),
        ("float('inf')", ""),
    ] {
        let script = format!(
            "import time\ntry:\n    time.sleep({arg})\n    r = 'slept'\nexcept Exception as e:\n    r = type(e).__name__\nr"
        );
        for python in [PythonChoice::Monty, PythonChoice::Cpython] {
            let r = run_tight_on(python, &script).await;
            // inf may either be refused or sleep until the total timeout; it must never crash.
            if expected.is_empty() {
                assert!(
                    matches!(r.status, ChainStatus::Ok | ChainStatus::Timeout),
                    "{arg}: {r:#?}"
                );
                assert_ne!(r.error_kind(), Some(ErrorKind::Crash), "{arg}: {r:#?}");
            } else {
                assert_eq!(r.status, ChainStatus::Ok, "{arg}: {r:#?}");
                assert_eq!(r.output, serde_json::json!(expected), "{arg} on {python:?}");
            }
        }
    }
    assert_next_chain_ok().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn cpu_limit_fires_even_when_the_total_timeout_is_generous() {
    let policy = ChainPolicy {
        max_cpu_s: 0.3,
        total_timeout_s: 30.0,
        ..tight()
    };
    let started = Instant::now();
    let r = run_adversarial("while True:\n    x = [i * i for i in range(1000)]", &policy).await;
    assert_ended(&r, ChainStatus::Error, ErrorKind::Cpu);
    // Far below the total timeout, whatever the machine's load (0.3 s of
    // CPU takes longer than that in wall time on a busy host).
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "took {:?}",
        started.elapsed()
    );
    assert_next_chain_ok().await;
}
