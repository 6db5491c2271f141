//! Stack attacks: unbounded Python recursion, recursion through builtins,
//! and source code nested so deeply that a recursive parser would overflow.

use chainbox::{CallStatus, ChainStatus, ErrorKind};
use serde_json::json;

use crate::fixtures::{
    assert_ended, assert_next_chain_ok, assert_ok, assert_trace, cpu_capped, run_adversarial, run_tight,
};

#[tokio::test(flavor = "multi_thread")]
async fn unbounded_recursion_is_a_recursion_error_with_earlier_records_intact() {
    let r = run_tight("await noop()\ndef f(n):\n    return f(n + 1)\nf(0)").await;
    assert_ended(&r, ChainStatus::Error, ErrorKind::Script);
    assert_eq!(r.error.as_ref().map(|e| e.error_type.as_str()), Some("RecursionError"));
    assert_trace(&r, &[("noop", CallStatus::Ok)]);
    assert_next_chain_ok().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn recursion_error_is_catchable_and_the_chain_goes_on() {
    let r = run_tight("def f(n):\n    return f(n + 1)\ntry:\n    f(0)\nexcept RecursionError:\n    r = 'caught'\n[r, await add(a=1, b=1)]").await;
    assert_ok(&r);
    assert_eq!(r.output, json!(["caught", 2.0]));
    assert_trace(&r, &[("add", CallStatus::Ok)]);
    assert_next_chain_ok().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn mutual_recursion_through_lambdas_and_builtins_is_a_recursion_error() {
    let r = run_tight("def f(n):\n    return sorted([n], key=lambda x: f(x + 1))\nf(0)").await;
    assert_ended(&r, ChainStatus::Error, ErrorKind::Script);
    assert_next_chain_ok().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn tool_call_at_maximum_recursion_depth_works() {
    let r = run_tight(
        "async def f(n):\n    if n == 0:\n        return await add(a=1, b=1)\n    return await f(n - 1)\nawait f(900)",
    )
    .await;
    assert_ok(&r);
    assert_eq!(r.output, json!(2.0));
    assert_trace(&r, &[("add", CallStatus::Ok)]);
    assert_next_chain_ok().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn ten_thousand_nested_brackets_are_a_compile_error() {
    let script = format!("await noop()\nx = {}{}\n1", "[".repeat(10_000), "]".repeat(10_000));
    let r = run_tight(&script).await;
    assert_ended(&r, ChainStatus::Error, ErrorKind::Compile);
    // monty's parser refuses it, so `auto` hands it to CPython, whose parser
    // on WASI overflows its stack guard first (`MemoryError`, where native
    // CPython says `SyntaxError: too many nested parentheses`): either way a
    // compile error, before anything ran.
    let error_type = r.error.as_ref().map(|e| e.error_type.as_str());
    assert!(matches!(error_type, Some("SyntaxError" | "MemoryError")), "{r:#?}");
    assert_trace(&r, &[]);
    assert_next_chain_ok().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn ten_thousand_nested_parentheses_dicts_and_calls_are_compile_errors() {
    for script in [
        format!("x = {}1{}", "(".repeat(10_000), ")".repeat(10_000)),
        format!("x = {}1{}", "{'a':".repeat(10_000), "}".repeat(10_000)),
        format!("x = {}1{}", "abs(".repeat(10_000), ")".repeat(10_000)),
        format!("x = {}1", "-".repeat(100_000)),
        format!("x = {}1", "not ".repeat(10_000)),
    ] {
        let r = run_tight(&script).await;
        assert_ended(&r, ChainStatus::Error, ErrorKind::Compile);
    }
    assert_next_chain_ok().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn deeply_nested_blocks_are_a_compile_error() {
    let mut script = String::new();
    for depth in 0..2_000 {
        script.push_str(&" ".repeat(depth));
        script.push_str("if True:\n");
    }
    script.push_str(&" ".repeat(2_000));
    script.push_str("x = 1\n");
    let r = run_tight(&script).await;
    assert_ended(&r, ChainStatus::Error, ErrorKind::Compile);
    assert_next_chain_ok().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_hundred_thousand_term_expression_ends_typed_and_the_engine_survives() {
    let script = format!("x = {}\nx", vec!["1"; 100_000].join("+"));
    let r = run_tight(&script).await;
    assert_eq!(r.status, ChainStatus::Error, "{r:#?}");
    // Monty's compiler recurses on the left-deep tree and overflows the wasm
    // stack: wasmtime traps, the host classifies it. Any typed ending other
    // than a hang or a dead process is acceptable; see the report.
    assert!(
        matches!(
            r.error_kind(),
            Some(ErrorKind::Compile | ErrorKind::Crash | ErrorKind::Memory)
        ),
        "{r:#?}"
    );
    assert_next_chain_ok().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_multi_megabyte_script_is_bounded_by_the_sandbox_limits() {
    // Nothing caps the script's size up front; parsing it is guest CPU.
    for script in [
        format!("{}1", "x = 1\n".repeat(1_500_000)),
        format!("x = '{}'\nlen(x)", "a".repeat(10_000_000)),
    ] {
        let r = run_adversarial(&script, &cpu_capped()).await;
        assert_eq!(r.status, ChainStatus::Error, "{:?}", r.error);
        assert!(
            matches!(r.error_kind(), Some(ErrorKind::Cpu | ErrorKind::Memory)),
            "{:?}",
            r.error
        );
    }
    assert_next_chain_ok().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn native_recursion_over_hundred_thousand_deep_values_is_a_recursion_error_not_a_stack_overflow() {
    // monty's native recursion (the scan sends `hash` of a tuple, as any
    // hasattr/getattr or set iteration, to CPython under `auto`).
    let policy = chainbox::ChainPolicy {
        max_cpu_s: 10.0,
        total_timeout_s: 10.0,
        python: chainbox::PythonChoice::Monty,
        ..crate::fixtures::tight()
    };
    let r = run_adversarial(
        "import json\nimport copy\nx = []\ny = []\nt = ()\nfor i in range(100000):\n    x = [x]\n    y = [y]\n    t = (t,)\nout = []\nfor f in [lambda: x == y, lambda: x < y, lambda: hash(t), lambda: json.dumps(x), lambda: copy.deepcopy(x), lambda: x in [y], lambda: sorted([x, y]), lambda: {t: 1}, lambda: len(repr(x)) < 10000]:\n    try:\n        f()\n        out.append('ok')\n    except RecursionError:\n        out.append('RecursionError')\nx = None\n[out, await noop()]",
        &policy,
    )
    .await;
    assert_ok(&r);
    // Every walk runs out of stack (a repr used to be cut to `...` instead).
    assert_eq!(r.output[0], json!(vec!["RecursionError"; 9]), "{r:#?}");
    assert_trace(&r, &[("noop", CallStatus::Ok)]);
    assert_next_chain_ok().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_answer_nested_past_the_stack_is_a_recursion_error_not_a_placeholder() {
    // Exported past the data depth, the answer was cut to a
    // `<deeply nested>` leaf and came back as if it were the value.
    let policy = chainbox::ChainPolicy {
        python: chainbox::PythonChoice::Monty,
        ..crate::fixtures::tight()
    };
    let r = run_adversarial(
        "await noop()
x = []
for i in range(100000):
    x = [x]
x",
        &policy,
    )
    .await;
    assert_ended(&r, ChainStatus::Error, ErrorKind::Script);
    assert_eq!(
        r.error.as_ref().map(|e| e.error_type.as_str()),
        Some("RecursionError"),
        "{r:#?}"
    );
    assert_trace(&r, &[("noop", CallStatus::Ok)]);
    assert_next_chain_ok().await;
}
