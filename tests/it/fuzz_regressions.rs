//! Inputs of the fuzz targets (`fuzz/`), replayed through the normal engine
//! and protocol API so they stay fixed without cargo-fuzz. Every file in
//! `fuzz/seeds/chain/` and `fuzz/regressions/chain/` runs as a script under
//! the `chain` target's limits and must give a well-formed `ChainRunResult`;
//! every file in `fuzz/{seeds,regressions}/guest_messages/` is decoded as the
//! message its first byte selects and must be refused or accepted without a
//! panic. A crash a fuzz target finds goes into `fuzz/regressions/<target>/`
//! (with a named test here when it needs more than the shared checks); this
//! module alone runs with `cargo test --test it fuzz_regressions::`.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use chainbox::{Approval, CallStatus, ChainPolicy, ChainRunResult, ChainStatus, ErrorKind, ToolRegistry, ToolRisk};
use chainbox_protocol::{
    CallOutcome, Completions, Finish, FsOutcome, LoadArtifact, RunRequest, ToolCall, Wait, decode,
};
use monty_types::OsFunctionCall;
use serde_json::{Value, json};

use crate::fixtures::{SleepTool, add_tool, delete_tool, echo_tool, engine, fail_tool, fn_tool};

/// The `chain` fuzz target's limits (fuzz/fuzz_targets/chain.rs).
fn fuzz_policy() -> ChainPolicy {
    ChainPolicy {
        max_tool_calls: 8,
        call_timeout_s: 0.5,
        approval_timeout_s: 0.2,
        total_timeout_s: 1.0,
        max_inline_result_bytes: 1024,
        max_memory_bytes: 32 * 1024 * 1024,
        max_cpu_s: 0.5,
        max_stdout_bytes: 4096,
        max_arg_bytes: 16 * 1024,
        max_result_bytes: 64 * 1024,
        ..ChainPolicy::default()
    }
}

/// The result contract the `chain` target checks.
fn check_result(r: &ChainRunResult, policy: &ChainPolicy, elapsed: Duration) {
    let json = serde_json::to_string(r).expect("result serialises");
    let back: ChainRunResult = serde_json::from_str(&json).expect("result parses back");
    assert_eq!(&back, r, "result does not round-trip through JSON");
    match (r.status, &r.error) {
        (ChainStatus::Ok, None) => {}
        (ChainStatus::Ok, Some(e)) => panic!("ok result with an error: {e:?}"),
        // No chain the fuzzer runs is durable.
        (ChainStatus::Suspended, _) => panic!("a chain without a journal suspended: {r:?}"),
        (_, None) => panic!("{:?} result without an error", r.status),
        (ChainStatus::Timeout, Some(e)) => assert_eq!(e.kind, ErrorKind::Timeout, "{e:?}"),
        (ChainStatus::Error, Some(e)) => assert_ne!(e.kind, ErrorKind::Timeout, "{e:?}"),
    }
    assert_eq!(r.tool_calls as usize, r.call_trace.len());
    assert!(r.tool_calls <= policy.max_tool_calls);
    for c in &r.call_trace {
        assert_eq!(c.args_digest.len(), 64, "{c:?}");
        assert!(c.duration_ms.is_finite() && c.duration_ms >= 0.0, "{c:?}");
        assert_eq!(c.status == CallStatus::Ok, c.error.is_none(), "{c:?}");
    }
    assert!(r.stdout.len() as u64 <= policy.max_stdout_bytes);
    assert!(r.usage.peak_memory_bytes <= policy.max_memory_bytes);
    let bound = Duration::from_secs_f64(policy.total_timeout_s) + Duration::from_secs(10);
    assert!(elapsed < bound, "chain took {elapsed:?}");
}

/// The `chain` target's tools: `add`, `echo`, `fail`, `big`, `sleep`, and
/// `delete` (high risk, so denied).
fn fuzz_registry() -> ToolRegistry {
    ToolRegistry::from_local([
        add_tool(),
        echo_tool(),
        fail_tool(),
        fn_tool("big", &["n"], |a| {
            let n = a.get("n").and_then(Value::as_u64).unwrap_or(1000).min(100_000) as usize;
            Ok(json!("x".repeat(n)))
        }),
        Arc::new(SleepTool),
        delete_tool(),
    ])
    .expect("registry")
}

/// Runs `script` as the `chain` target does and checks the result.
async fn run_checked(script: &str) -> ChainRunResult {
    let policy = fuzz_policy();
    let started = Instant::now();
    let r = engine()
        .run(script, &fuzz_registry(), &policy, &Approval::auto(ToolRisk::Safe))
        .await;
    check_result(&r, &policy, started.elapsed());
    r
}

/// The target's seeds and its regression inputs, so the contract the fuzz
/// targets check also holds for them in a plain `cargo test`.
fn inputs(target: &str) -> Vec<PathBuf> {
    let fuzz = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
    let mut files: Vec<PathBuf> = ["seeds", "regressions"]
        .iter()
        .flat_map(|kind| std::fs::read_dir(fuzz.join(kind).join(target)).into_iter().flatten())
        .flatten()
        .map(|e| e.path())
        .collect();
    files.sort();
    files
}

#[tokio::test(flavor = "multi_thread")]
async fn chain_regressions_give_well_formed_results() {
    let paths = inputs("chain");
    assert!(!paths.is_empty(), "no inputs found under fuzz/seeds/chain");
    for path in paths {
        let bytes = std::fs::read(&path).expect("regression input");
        run_checked(&String::from_utf8_lossy(&bytes)).await;
    }
}

/// Decodes `payload` as the message the target's `selector` names; `true`
/// if it is one. Never panics, whatever the bytes.
fn decodes(selector: u8, payload: &[u8]) -> bool {
    match selector % 6 {
        0 => decode::<ToolCall>("tool call", payload).is_ok(),
        1 => decode::<Wait>("wait", payload).is_ok(),
        2 => decode::<OsFunctionCall>("os call", payload).is_ok(),
        3 => decode::<LoadArtifact>("load_artifact", payload).is_ok(),
        4 => decode::<Finish>("finish", payload).is_ok(),
        _ => [
            decode::<RunRequest>("run request", payload).is_ok(),
            decode::<CallOutcome>("call outcome", payload).is_ok(),
            decode::<Completions>("completions", payload).is_ok(),
            decode::<FsOutcome>("fs outcome", payload).is_ok(),
        ]
        .contains(&true),
    }
}

#[test]
fn guest_message_regressions_decode_without_panicking() {
    let mut seen = 0;
    for path in inputs("guest_messages") {
        let bytes = std::fs::read(&path).expect("regression input");
        if let Some((&selector, payload)) = bytes.split_first() {
            decodes(selector, payload);
            seen += 1;
        }
    }
    assert!(seen > 0, "no inputs found under fuzz/seeds/guest_messages");
}

/// The seeds are valid messages of today's protocol: a message that changes
/// shape must take its seeds along, or the fuzzer starts from garbage.
#[test]
fn every_guest_message_seed_decodes_as_its_message() {
    let seeds = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/seeds/guest_messages");
    let mut seen = 0;
    for entry in std::fs::read_dir(&seeds).expect("seeds").flatten() {
        let bytes = std::fs::read(entry.path()).expect("seed");
        let (&selector, payload) = bytes.split_first().expect("a seed has a selector byte");
        assert!(
            decodes(selector, payload),
            "{} no longer decodes",
            entry.path().display()
        );
        seen += 1;
    }
    assert!(seen > 0);
}
