//! Output attacks: floods of `print`, a final value larger than allowed,
//! and text that is not valid UTF-8 (lone surrogates) or full of control
//! characters, which must come back as valid, escaped JSON.

use chainbox::{CallStatus, ChainPolicy, ChainStatus, ErrorKind};
use serde_json::json;

use crate::fixtures::{
    MIB, assert_ended, assert_next_chain_ok, assert_ok, assert_trace, cpu_capped, run_adversarial, run_tight, tight,
};

#[tokio::test(flavor = "multi_thread")]
async fn stdout_flood_is_capped_and_counted_until_the_cpu_limit() {
    let r = run_adversarial("await noop()\nwhile True:\n    print('x' * 1000)", &cpu_capped()).await;
    assert_ended(&r, ChainStatus::Error, ErrorKind::Cpu);
    assert_trace(&r, &[("noop", CallStatus::Ok)]);
    assert!(r.stdout.len() <= 4096, "{}", r.stdout.len());
    assert!(r.usage.stdout_truncated);
    assert!(r.usage.stdout_bytes > 100_000, "{:?}", r.usage);
    assert_next_chain_ok().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn one_huge_print_without_newline_is_capped() {
    let r = run_tight("print('y' * (8 * 1024 * 1024), end='')\n'done'").await;
    assert_ok(&r);
    assert_eq!(r.output, json!("done"));
    assert_eq!(r.stdout.len(), 4096);
    assert!(r.usage.stdout_truncated);
    assert_eq!(r.usage.stdout_bytes, 8 * MIB);
    assert_next_chain_ok().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn multibyte_output_is_cut_on_a_character_boundary() {
    let r = run_tight("print('é' * 10000)\n1").await;
    assert_ok(&r);
    assert!(r.stdout.len() <= 4096 && r.stdout.len() >= 4094, "{}", r.stdout.len());
    assert!(r.stdout.chars().all(|c| c == 'é'));
    assert_next_chain_ok().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn lone_surrogates_in_output_and_stdout_become_valid_utf8() {
    let r = run_tight("print('a\\ud800b\\udfff')\ns = '\\ud800'\n{'k\\udc00': s, 'list': [s]}").await;
    assert_ok(&r);
    let text = serde_json::to_string(&r).expect("valid JSON");
    let back: serde_json::Value = serde_json::from_str(&text).expect("round-trips");
    assert_eq!(back["status"], "ok");
    assert!(r.stdout.starts_with('a') && r.stdout.ends_with('\n'), "{:?}", r.stdout);
    assert_next_chain_ok().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn control_characters_in_output_are_escaped_in_the_json() {
    let r = run_tight("print('\\x00\\x1b[2J\\x07\\r')\n'\\x00\\x1b]0;pwned\\x07'").await;
    assert_ok(&r);
    assert_eq!(r.output, json!("\u{0}\u{1b}]0;pwned\u{7}"));
    assert_eq!(r.stdout, "\u{0}\u{1b}[2J\u{7}\r\n");
    let text = serde_json::to_string(&r).expect("valid JSON");
    assert!(!text.bytes().any(|b| b < 0x20), "raw control bytes in the JSON");
    assert_next_chain_ok().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn output_above_max_result_bytes_is_an_output_limit_error_with_the_trace() {
    let policy = ChainPolicy {
        max_result_bytes: 100_000,
        max_inline_result_bytes: 4096,
        ..tight()
    };
    let r = run_adversarial("await noop()\n'z' * 1000000", &policy).await;
    assert_ended(&r, ChainStatus::Error, ErrorKind::OutputLimit);
    assert_trace(&r, &[("noop", CallStatus::Ok)]);
    assert_next_chain_ok().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn output_that_is_not_json_comes_back_as_its_repr() {
    let r = run_tight("[float('nan'), 2 ** 200, b'\\xff\\x00', lambda: 1, {1, 2}]").await;
    assert_ok(&r);
    assert!(!r.output_text.is_empty());
    serde_json::to_string(&r).expect("valid JSON");
    assert_next_chain_ok().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn huge_exception_messages_and_tracebacks_are_cut_in_the_result() {
    // Both came back whole: `raise ValueError('x' * 3 * 10**6)` made a 6 MB
    // result (fixed: ChainError::bounded).
    for script in [
        "await noop()\nraise ValueError('x' * 3 * 10**6)",
        "await noop()\ndef f(n):\n    if n == 0:\n        raise KeyError('k' * 10**5)\n    return g(n - 1)\ndef g(n):\n    return f(n)\nf(900)",
    ] {
        let r = run_tight(script).await;
        assert_ended(&r, ChainStatus::Error, ErrorKind::Script);
        assert_trace(&r, &[("noop", CallStatus::Ok)]);
        let e = r.error.as_ref().expect("an error");
        assert!(e.message.chars().count() <= 2000, "{} chars", e.message.len());
        assert!(
            e.traceback.as_ref().is_some_and(|t| t.chars().count() <= 16_100),
            "{e:?}"
        );
        let json = serde_json::to_string(&r).expect("valid JSON");
        assert!(json.len() < 64 * 1024, "{} bytes", json.len());
    }
    assert_next_chain_ok().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn exception_with_a_huge_message_is_reported_cut_short_not_as_a_crash() {
    // 10 MB of message under a 64 MiB cap: the guest cuts the message and the
    // traceback before copying, formatting and encoding them (it used to run
    // out of memory doing so and end as `crash`).
    let r = run_tight("raise ValueError('x' * 10**7)").await;
    assert_ended(&r, ChainStatus::Error, ErrorKind::Script);
    let e = r.error.as_ref().expect("an error");
    assert_eq!(e.error_type, "ValueError");
    assert!(
        e.message.chars().count() <= 2_001,
        "{} chars",
        e.message.chars().count()
    );
    assert!(
        e.traceback.as_ref().is_some_and(|t| t.chars().count() <= 16_100),
        "{e:?}"
    );
    assert_next_chain_ok().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn stdout_and_usage_survive_the_total_timeout() {
    let policy = ChainPolicy {
        call_timeout_s: 5.0,
        total_timeout_s: 0.5,
        ..tight()
    };
    let r = run_adversarial(
        "print('step 1')\nawait noop()\nprint('step 2')\nawait sleep(seconds=30)",
        &policy,
    )
    .await;
    assert_ended(&r, ChainStatus::Timeout, ErrorKind::Timeout);
    assert_trace(&r, &[("noop", CallStatus::Ok), ("sleep", CallStatus::Timeout)]);
    assert_eq!(r.stdout, "step 1\nstep 2\n");
    assert_eq!(r.usage.stdout_bytes, 14);
    assert!(r.usage.peak_memory_bytes > 0);
    assert!(
        r.usage.cpu_ms < 250.0,
        "time parked in a tool is not CPU: {}",
        r.usage.cpu_ms
    );
    assert_next_chain_ok().await;
}
