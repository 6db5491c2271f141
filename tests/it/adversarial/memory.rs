//! Memory attacks: strings, lists, dicts and big ints that grow without
//! bound, and structures nested far deeper than anything sane. The hard cap
//! is the wasm linear memory (`max_memory_bytes`); monty's own limit fires
//! a little below it, with the same error.

use chainbox::{CallStatus, ChainStatus, ErrorKind};
use serde_json::json;

use chainbox::{ChainPolicy, ChainRunResult, Interpreter, PythonChoice};

use crate::fixtures::{MIB, assert_ended, assert_next_chain_ok, assert_ok, assert_trace, run_adversarial, tight};

/// Runs `script` under [`tight`] limits but with CPU to spare: these cases
/// are about memory, and a busy machine must not turn them into CPU cases.
async fn run(script: &str) -> ChainRunResult {
    let policy = ChainPolicy {
        max_cpu_s: 10.0,
        total_timeout_s: 10.0,
        ..tight()
    };
    run_adversarial(script, &policy).await
}

#[tokio::test(flavor = "multi_thread")]
async fn doubling_string_is_stopped_with_kind_memory_and_the_trace_kept() {
    let r = run("await echo(text='a')\ns = 'x' * 1024\nwhile True:\n    s = s + s").await;
    assert_ended(&r, ChainStatus::Error, ErrorKind::Memory);
    assert_trace(&r, &[("echo", CallStatus::Ok)]);
    assert!(r.usage.peak_memory_bytes <= 64 * MIB, "{:?}", r.usage);
    assert_next_chain_ok().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn growing_list_is_stopped_with_kind_memory() {
    let r = run("l = []\nwhile True:\n    l.append('abcdefgh' * 100)").await;
    assert_ended(&r, ChainStatus::Error, ErrorKind::Memory);
    assert!(r.usage.peak_memory_bytes <= 64 * MIB, "{:?}", r.usage);
    assert_next_chain_ok().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn growing_dict_is_stopped_with_kind_memory() {
    let r = run("d = {}\ni = 0\nwhile True:\n    d[i] = str(i)\n    i += 1").await;
    assert_ended(&r, ChainStatus::Error, ErrorKind::Memory);
    assert!(r.usage.peak_memory_bytes <= 64 * MIB, "{:?}", r.usage);
    assert_next_chain_ok().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn doubling_bytes_kept_as_hex_is_stopped_with_kind_memory() {
    // monty built `hex()` through an unchecked `Vec<char>` (8 bytes per
    // input byte): this trapped the sandbox before stop 29.
    // Forced onto monty: `auto` sends any `.hex(` to CPython.
    let policy = ChainPolicy {
        max_cpu_s: 10.0,
        total_timeout_s: 10.0,
        python: PythonChoice::Monty,
        ..tight()
    };
    let script = "o = b'x' * 1000\nkeep = []\nwhile True:\n    keep.append(o.hex())\n    o = o + o";
    let r = run_adversarial(script, &policy).await;
    assert_eq!(r.interpreter, Interpreter::Monty);
    assert_ended(&r, ChainStatus::Error, ErrorKind::Memory);
    assert_next_chain_ok().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn doubling_big_int_is_stopped_with_kind_memory() {
    let r = run("x = 3\nn = 2\nwhile True:\n    x = (x << n) | x\n    n = n * 2").await;
    assert_ended(&r, ChainStatus::Error, ErrorKind::Memory);
    assert_next_chain_ok().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn gigantic_power_is_refused_before_it_is_computed() {
    let r = run("x = 10 ** (10 ** 9)").await;
    assert_ended(&r, ChainStatus::Error, ErrorKind::Memory);
    assert!(r.duration_ms < 1000.0, "refused up front, not after computing: {r:?}");
    assert_next_chain_ok().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn memory_error_cannot_be_caught_to_keep_allocating() {
    let r = run(
        "keep = []\nwhile True:\n    try:\n        keep.append('x' * 10**6)\n    except MemoryError:\n        pass",
    )
    .await;
    assert_ended(&r, ChainStatus::Error, ErrorKind::Memory);
    assert_next_chain_ok().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_memory_error_the_script_raises_itself_is_a_script_error_not_a_memory_kill() {
    let r = run("raise MemoryError('my own')").await;
    assert_ended(&r, ChainStatus::Error, ErrorKind::Script);
    let error = r.error.as_ref().expect("an error");
    assert_eq!(
        (error.error_type.as_str(), error.message.as_str()),
        ("MemoryError", "my own")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn hundred_thousand_deep_nested_lists_are_fine_in_memory() {
    let r = run("x = []\nfor i in range(100000):\n    x = [x]\nd = 0\nwhile x:\n    x = x[0]\n    d += 1\nd").await;
    assert_ok(&r);
    assert_eq!(r.output, json!(100000));
    assert_next_chain_ok().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn repr_of_a_deeply_nested_dict_does_not_crash_the_sandbox() {
    let r = run("x = {}\nfor i in range(100000):\n    x = {'a': x}\ns = repr(x)\nlen(s) > 0").await;
    // Either repr copes or the script gets a Python error; never a crash.
    assert_ne!(r.error_kind(), Some(ErrorKind::Crash), "{r:#?}");
    assert!(matches!(r.status, ChainStatus::Ok | ChainStatus::Error), "{r:#?}");
    assert_next_chain_ok().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn returning_a_deeply_nested_value_as_output_is_not_a_crash() {
    let r = run("x = []\nfor i in range(10000):\n    x = [x]\nx").await;
    assert_ne!(r.error_kind(), Some(ErrorKind::Crash), "{r:#?}");
    assert_next_chain_ok().await;
}
