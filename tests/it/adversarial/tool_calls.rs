//! Tool-call attacks: floods past the call budget (one by one and
//! gathered), arguments that are huge, absurdly deep, not JSON, or full of
//! NUL bytes and lone surrogates, and names no script could write, sent
//! straight to the invoker the sandbox talks to.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use chainbox::invoker::InvokerSession;
use chainbox::{Approval, CallStatus, ChainPolicy, ChainStatus, ErrorKind, Interpreter, PythonChoice, ToolRisk};
use chainbox_protocol::{CallOutcome, ToolCall};
use serde_json::{Map, Value, json};

use crate::fixtures::{
    MIB, adversarial_registry, adversarial_registry_with, assert_ended, assert_next_chain_ok, assert_ok, assert_trace,
    assert_trace_all, call, fn_tool, invoker_session, output_str, run_adversarial, run_full, run_tight, tight,
};

#[tokio::test(flavor = "multi_thread")]
async fn sequential_flood_ends_at_the_budget_with_every_call_recorded() {
    let r = run_tight("i = 0\nwhile True:\n    await noop()\n    i += 1").await;
    assert_ended(&r, ChainStatus::Error, ErrorKind::ToolBudget);
    assert_trace_all(&r, "noop", CallStatus::Ok, 20);
    assert_next_chain_ok().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn budget_exhaustion_cannot_be_caught() {
    let r = run_tight("for i in range(1000):\n    try:\n        await noop()\n    except BaseException:\n        pass\n'escaped the budget'").await;
    assert_ended(&r, ChainStatus::Error, ErrorKind::ToolBudget);
    assert_eq!(r.output, Value::Null);
    assert_trace_all(&r, "noop", CallStatus::Ok, 20);
    assert_next_chain_ok().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn gathered_flood_ends_at_the_budget_with_one_record_per_admitted_call() {
    let r = run_tight("import asyncio\nawait asyncio.gather(*[echo(text=str(i)) for i in range(10000)])").await;
    assert_ended(&r, ChainStatus::Error, ErrorKind::ToolBudget);
    assert_eq!(r.tool_calls, 20, "{r:#?}");
    assert_eq!(r.call_trace.len(), 20);
    // Calls still in flight when the budget ended the chain are reported as
    // interrupted errors; none is lost or invented.
    for c in &r.call_trace {
        assert_eq!(c.tool, "echo");
        assert!(matches!(c.status, CallStatus::Ok | CallStatus::Error), "{c:?}");
    }
    assert_next_chain_ok().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn gathered_slow_calls_within_budget_run_concurrently() {
    let started = Instant::now();
    let r = run_tight("import asyncio\nlen(await asyncio.gather(*[sleep(seconds=0.3) for i in range(20)]))").await;
    assert_ok(&r);
    assert_eq!(r.output, json!(20));
    assert_trace_all(&r, "sleep", CallStatus::Ok, 20);
    assert!(
        started.elapsed() < Duration::from_millis(1500),
        "{:?}",
        started.elapsed()
    );
    assert_next_chain_ok().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn gathered_flood_of_slow_calls_past_the_budget_is_cut_at_once() {
    let started = Instant::now();
    let r = run_tight("import asyncio\nawait asyncio.gather(*[sleep(seconds=30) for i in range(100)])").await;
    assert_ended(&r, ChainStatus::Error, ErrorKind::ToolBudget);
    assert!(started.elapsed() < Duration::from_secs(2), "{:?}", started.elapsed());
    // The 20 admitted sleeps were in flight: interrupted, and recorded.
    assert_trace_all(&r, "sleep", CallStatus::Error, 20);
    assert!(
        r.call_trace
            .iter()
            .all(|c| c.error.as_deref().is_some_and(|e| e.contains("interrupted")))
    );
    assert_next_chain_ok().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn hundred_megabyte_argument_hits_the_memory_cap_first_under_tight_limits() {
    let r = run_tight("await noop()\nawait echo(text='x' * (100 * 1024 * 1024))").await;
    assert_ended(&r, ChainStatus::Error, ErrorKind::Memory);
    assert_trace(&r, &[("noop", CallStatus::Ok)]);
    assert_next_chain_ok().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn hundred_megabyte_argument_with_room_to_build_it_never_reaches_the_tool() {
    // Building 100 MB and converting it to JSON costs guest CPU, and the
    // host's decoding, canonicalising and hashing of the message is counted
    // against the same budget (it is work the script caused). Which limit
    // stops it depends on the machine's speed: the CPU limit while the guest
    // still builds the message (or while the host reads it), or, on a fast
    // host, `max_arg_bytes` refusing the call (the script's `ValueError`).
    // What must hold either way: the chain ends contained, its trace kept,
    // and the tool never runs.
    let policy = ChainPolicy {
        max_memory_bytes: 1024 * MIB,
        max_cpu_s: 0.5,
        ..tight()
    };
    let (sink, ran) = sink();
    let r = run_full(
        "await noop()\nawait sink(data='x' * (100 * 1024 * 1024))",
        &adversarial_registry_with([sink]),
        &policy,
        &Approval::auto(ToolRisk::Safe),
    )
    .await;
    assert_eq!(r.status, ChainStatus::Error, "{r:#?}");
    match r.error_kind() {
        Some(ErrorKind::Cpu) => {}
        Some(ErrorKind::Script) => {
            let error = r.error.as_ref().expect("an error");
            assert_eq!(error.error_type, "ValueError", "{r:#?}");
            assert!(error.message.contains("max_arg_bytes"), "{r:#?}");
        }
        other => panic!("ended by {other:?}, not by the CPU limit or max_arg_bytes: {r:#?}"),
    }
    if r.call_trace.len() == 2 {
        assert_trace(&r, &[("noop", CallStatus::Ok), ("sink", CallStatus::Error)]);
        let refusal = r.call_trace[1].error.as_deref().unwrap_or_default();
        assert!(refusal.contains("max_arg_bytes"), "{r:#?}");
    } else {
        assert_trace(&r, &[("noop", CallStatus::Ok)]);
    }
    assert!(!ran.load(Ordering::SeqCst), "the tool ran");
    assert_next_chain_ok().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn oversized_argument_is_refused_by_max_arg_bytes_and_the_tool_never_runs() {
    // The script's CPU clock is wall time while the guest runs: generous, so
    // a busy machine does not turn this into a CPU-limit case.
    let policy = ChainPolicy {
        max_memory_bytes: 256 * MIB,
        max_cpu_s: 10.0,
        total_timeout_s: 10.0,
        ..tight()
    };
    let (sink, ran) = sink();
    let r = run_full(
        "try:\n    await sink(data='x' * (2 * 1024 * 1024))\n    r = 'accepted'\nexcept ValueError as e:\n    r = str(e)\nr",
        &adversarial_registry_with([sink]),
        &policy,
        &Approval::auto(ToolRisk::Safe),
    )
    .await;
    assert_ok(&r);
    assert!(output_str(&r).contains("max_arg_bytes"), "{r:#?}");
    assert_trace(&r, &[("sink", CallStatus::Error)]);
    assert!(!ran.load(Ordering::SeqCst), "the tool ran");
    assert_next_chain_ok().await;
}

/// `sink(data)`: records that it ran.
fn sink() -> (Arc<dyn chainbox::Tool>, Arc<AtomicBool>) {
    let ran = Arc::new(AtomicBool::new(false));
    let seen = ran.clone();
    let tool = fn_tool("sink", &["data"], move |_| {
        seen.store(true, Ordering::SeqCst);
        Ok(Value::Null)
    });
    (tool, ran)
}

#[tokio::test(flavor = "multi_thread")]
async fn ten_thousand_deep_argument_is_refused_inside_the_sandbox() {
    let r = run_tight("x = 0\nfor i in range(10000):\n    x = [x]\ntry:\n    await echo(text=x)\n    r = 'sent'\nexcept TypeError as e:\n    r = str(e)\n[r, await noop()]").await;
    assert_ok(&r);
    assert!(
        r.output[0].as_str().unwrap_or_default().contains("nested deeper"),
        "{r:#?}"
    );
    // The refused call never left the sandbox: only the noop is recorded.
    assert_trace(&r, &[("noop", CallStatus::Ok)]);
    assert_next_chain_ok().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn self_referencing_argument_is_refused_not_looped_on() {
    let r = run_tight("x = []\nx.append(x)\nd = {}\nd['d'] = d\nout = []\nfor v in [x, d]:\n    try:\n        await echo(text=v)\n        out.append('sent')\n    except Exception as e:\n        out.append(type(e).__name__)\nout").await;
    assert_ok(&r);
    assert_eq!(r.output, json!(["TypeError", "TypeError"]), "{r:#?}");
    assert_trace(&r, &[]);
    assert_next_chain_ok().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn non_json_arguments_are_type_errors_and_never_reach_the_host() {
    let r = run_tight("out = []\nfor v in [float('nan'), float('inf'), lambda: 1, 2 ** 2000, b'bytes']:\n    try:\n        await echo(text=v)\n        out.append('sent')\n    except Exception as e:\n        out.append(type(e).__name__)\nout").await;
    assert_ok(&r);
    let out = r.output.as_array().cloned().unwrap_or_default();
    assert_eq!(out.len(), 5, "{r:#?}");
    // Whatever was refused left no record; whatever was sent has one.
    let sent = out.iter().filter(|v| *v == "sent").count();
    assert_eq!(r.call_trace.len(), sent, "{r:#?}");
    assert!(out[0] != "sent" && out[1] != "sent" && out[2] != "sent", "{out:?}");
    assert_next_chain_ok().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn nul_bytes_in_arguments_arrive_as_valid_text() {
    let r = run_tight("await echo(text={'a\\x00b': 'c\\x00d', '\\x00': ['\\x00' * 3]})").await;
    assert_ok(&r);
    assert_eq!(r.output["a\u{0}b"], json!("c\u{0}d"), "{r:#?}");
    assert_eq!(r.output["\u{0}"], json!(["\u{0}\u{0}\u{0}"]));
    assert_trace(&r, &[("echo", CallStatus::Ok)]);
    assert_next_chain_ok().await;
}

/// A lone surrogate cannot be UTF-8. monty's strings never hold one (its
/// literals hold U+FFFD there), so its call goes out as valid text; the
/// CPython guest, where `auto` sends a script that writes one, refuses the
/// call with CPython's UnicodeEncodeError before anything reaches the host.
#[tokio::test(flavor = "multi_thread")]
async fn lone_surrogates_in_arguments_never_reach_the_host_as_invalid_text() {
    let script = "await echo(text={'sur\\ud800': '\\udfff'})";
    let on = |python| ChainPolicy { python, ..tight() };
    let monty = run_adversarial(script, &on(PythonChoice::Monty)).await;
    assert_ok(&monty);
    assert_eq!(monty.output, json!({"sur\u{fffd}": "\u{fffd}"}), "{monty:#?}");
    assert_trace(&monty, &[("echo", CallStatus::Ok)]);
    let auto = run_tight(script).await;
    assert_eq!(auto.interpreter, Interpreter::Cpython);
    assert_ended(&auto, ChainStatus::Error, ErrorKind::Script);
    assert_eq!(
        auto.error.as_ref().map(|e| e.error_type.as_str()),
        Some("UnicodeEncodeError")
    );
    assert_trace(&auto, &[]);
    assert_next_chain_ok().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn ten_thousand_keyword_arguments_are_handled() {
    let r = run_tight("await echo(text='t', **{'k' + str(i): i for i in range(10000)})").await;
    assert_ok(&r);
    assert_eq!(r.output, json!("t"));
    assert_trace(&r, &[("echo", CallStatus::Ok)]);
    assert_next_chain_ok().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn artifact_refs_of_another_chain_do_not_resolve() {
    let first = run_tight("h = await big(n=10000)\nh['artifact_ref']").await;
    assert_ok(&first);
    let stolen = output_str(&first).to_owned();
    assert!(stolen.starts_with("sha256:"), "{first:#?}");
    let script = format!(
        "out = []\nfor h in [{{'$artifact': '{stolen}'}}, {{'artifact_ref': '{stolen}', 'media_type': 'application/json', 'size': 10002, 'preview': ''}}]:\n    try:\n        r = await echo(text=h)\n        out.append('resolved')\n    except ValueError as e:\n        out.append('refused')\nout"
    );
    let r = run_tight(&script).await;
    assert_ok(&r);
    assert_eq!(
        r.output,
        json!(["refused", "refused"]),
        "another chain's artifact resolved: {r:#?}"
    );
    assert_trace(&r, &[("echo", CallStatus::Error), ("echo", CallStatus::Error)]);
    assert_next_chain_ok().await;
}

fn session(policy: ChainPolicy) -> InvokerSession {
    invoker_session("adv", adversarial_registry(), policy, Approval::auto(ToolRisk::Safe))
}

#[tokio::test(flavor = "multi_thread")]
async fn names_with_nul_bytes_or_replacement_characters_are_not_found_at_the_invoker() {
    let s = session(tight());
    for name in [
        "echo\0",
        "\0echo",
        "ec\0ho",
        "echo\u{FFFD}",
        "\u{FEFF}echo",
        "",
        "echo\n",
        "../echo",
    ] {
        let outcome = s.invoke(call(name, json!({}))).await.expect("within budget");
        assert!(matches!(outcome, CallOutcome::NotFound { .. }), "{name:?}: {outcome:?}");
    }
    let trace = s.trace(CallStatus::Error, "interrupted");
    assert_eq!(trace.len(), 8);
    assert!(trace.iter().all(|c| c.status == CallStatus::Error));
    assert_next_chain_ok().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn nul_keys_and_huge_arguments_sent_straight_to_the_invoker_are_gated() {
    let s = session(tight());
    let mut args = Map::new();
    args.insert("text\0".into(), json!("\0"));
    let outcome = s
        .invoke(call("echo", Value::Object(args)))
        .await
        .expect("within budget");
    assert!(matches!(outcome, CallOutcome::Ok { .. }), "{outcome:?}");
    let mut huge = Map::new();
    huge.insert("text".into(), Value::String("x".repeat(16 * 1024 * 1024)));
    let outcome = s
        .invoke(call("echo", Value::Object(huge)))
        .await
        .expect("within budget");
    assert!(
        matches!(&outcome, CallOutcome::Invalid { message } if message.contains("max_arg_bytes")),
        "{outcome:?}"
    );
    let statuses: Vec<_> = s
        .trace(CallStatus::Error, "interrupted")
        .iter()
        .map(|c| c.status)
        .collect();
    assert_eq!(statuses, [CallStatus::Ok, CallStatus::Error]);
    assert_next_chain_ok().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn huge_timeouts_meaning_never_do_not_overflow_into_a_host_panic() {
    // `call_timeout_s = 1e19` passes validation; the call's deadline
    // (`now + timeout`) overflowed `Instant` and panicked out of
    // `Engine::run` (fixed in the invoker). Larger values (f64::MAX, inf)
    // are refused up front, as in a policy file (see the next test).
    for seconds in [1e19, 1.8e19] {
        let policy = ChainPolicy {
            call_timeout_s: seconds,
            approval_timeout_s: seconds / 2.0,
            total_timeout_s: seconds,
            max_cpu_s: seconds,
            ..tight()
        };
        let chain = tokio::spawn(async move {
            run_full(
                "import asyncio\n[await add(a=1, b=2), await asyncio.gather(noop(), noop())]",
                &adversarial_registry(),
                &policy,
                &Approval::auto(ToolRisk::Safe),
            )
            .await
        });
        let r = chain.await.expect("Engine::run panicked");
        assert_ok(&r);
        assert_eq!(r.output, json!([3.0, [null, null]]), "{seconds}: {r:#?}");
        assert_trace(
            &r,
            &[
                ("add", CallStatus::Ok),
                ("noop", CallStatus::Ok),
                ("noop", CallStatus::Ok),
            ],
        );
    }
    assert!(
        ChainPolicy {
            call_timeout_s: 1e19,
            approval_timeout_s: 1.0,
            ..ChainPolicy::default()
        }
        .validate()
        .is_ok()
    );
    assert_next_chain_ok().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_in_code_policy_with_infinite_timeouts_is_refused_like_a_policy_file() {
    for seconds in [f64::MAX, f64::INFINITY, f64::NAN] {
        let policy = ChainPolicy {
            call_timeout_s: seconds,
            ..tight()
        };
        let r = run_full(
            "await noop()",
            &adversarial_registry(),
            &policy,
            &Approval::auto(ToolRisk::Safe),
        )
        .await;
        assert_ended(&r, ChainStatus::Error, ErrorKind::Policy);
        assert!(
            r.error.as_ref().is_some_and(|e| e.message.contains("call_timeout_s")),
            "{seconds}: {r:#?}"
        );
        assert_trace(&r, &[]);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn invalid_utf8_and_nul_bytes_on_the_wire_are_refused_by_the_host_decoder() {
    // What a corrupted guest could send for a tool call: the host's decoder
    // refuses it with a typed error (the sandbox then ends the chain as a
    // protocol crash); it never panics and never yields a name to look up.
    let mut hostile: Vec<Vec<u8>> = vec![
        b"{\"tool\": \"ec\xffho\", \"args\": {}, \"line\": 1}".to_vec(),
        b"{\"tool\": \"echo\", \"args\": {\"text\": \"\xc3\x28\"}, \"line\": 1}".to_vec(),
        b"{\"tool\": \"echo\", \"args\": {\"te\xed\xa0\x80xt\": 1}, \"line\": 1}".to_vec(),
        b"{\"tool\": \"echo\0\", \"args\": {}, \"line\": 1}".to_vec(),
        b"{\"tool\": \"echo\", \"args\": {}, \"line\": 1}\0".to_vec(),
        b"\xef\xbb\xbf{\"tool\": \"echo\", \"args\": {}, \"line\": 1}".to_vec(),
        b"{\"tool\": \"echo\", \"args\": [], \"line\": -1}".to_vec(),
        vec![0xff; 1024],
        Vec::new(),
    ];
    let mut deep = b"{\"tool\": \"echo\", \"args\": {\"text\": ".to_vec();
    deep.extend(std::iter::repeat_n(b'[', 100_000));
    hostile.push(deep);
    for bytes in &hostile {
        assert!(
            chainbox_protocol::decode::<ToolCall>("tool call", bytes).is_err(),
            "accepted {:?}",
            String::from_utf8_lossy(&bytes[..bytes.len().min(80)])
        );
    }
    // An escaped NUL is valid JSON: it decodes, and the invoker finds no tool.
    let call: ToolCall =
        chainbox_protocol::decode("tool call", b"{\"tool\": \"echo\\u0000\", \"args\": {}, \"line\": 1}")
            .expect("valid");
    let outcome = session(tight()).invoke(call).await.expect("within budget");
    assert!(matches!(outcome, CallOutcome::NotFound { .. }), "{outcome:?}");
    assert_next_chain_ok().await;
}
