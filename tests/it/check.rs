//! The check before the run through the engine, the CLI and MCP's text: a
//! refused chain makes no call and says which calls cannot succeed; what
//! the check lets through runs as before.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use chainbox::{Approval, ChainPolicy, ChainRunResult, ChainStatus, ErrorKind, ToolRegistry, ToolRisk, TypeCheck};
use serde_json::{Value, json};

use crate::fixtures::{engine, tool};

/// `send(to: str, amount: int)` (a closed schema) counting its runs in `runs`.
fn registry(runs: &Arc<AtomicU32>) -> ToolRegistry {
    let runs = Arc::clone(runs);
    let send = tool("send", &[], move |_| {
        runs.fetch_add(1, Ordering::SeqCst);
        Ok(json!("sent"))
    })
    .with_schema(json!({
        "type": "object",
        "properties": {"to": {"type": "string"}, "amount": {"type": "integer"}},
        "required": ["to", "amount"],
        "additionalProperties": false
    }));
    ToolRegistry::from_local([Arc::new(send) as Arc<dyn chainbox::Tool>]).expect("registry")
}

async fn run(script: &str, type_check: TypeCheck, runs: &Arc<AtomicU32>) -> ChainRunResult {
    let policy = ChainPolicy {
        type_check,
        ..ChainPolicy::default()
    };
    engine()
        .run(script, &registry(runs), &policy, &Approval::auto(ToolRisk::Safe))
        .await
}

/// A value of the wrong type, then a tool that does not exist.
const TWO_BAD_CALLS: &str = "await send(to=1, amount=2)\nawait mail(to='x')";

/// Two good calls, then a misspelled argument.
const THIRD_CALL_BAD: &str = "await send(to='a', amount=1)\nawait send(to='b', amount=2)\nawait send(to='c', amout=3)";

#[tokio::test(flavor = "multi_thread")]
async fn a_chain_with_a_bad_tool_call_is_refused_before_any_call() {
    let runs = Arc::new(AtomicU32::new(0));
    let r = run(THIRD_CALL_BAD, TypeCheck::Enforce, &runs).await;
    assert_eq!(r.status, ChainStatus::Error);
    assert_eq!(r.error_kind(), Some(ErrorKind::TypeError), "{r:#?}");
    assert_eq!(r.error.as_ref().and_then(|e| e.line), Some(3));
    assert!(r.call_trace.is_empty() && r.tool_calls == 0, "{r:#?}");
    assert_eq!(runs.load(Ordering::SeqCst), 0, "no call was made");
    let rules: Vec<(&str, u32)> = r.diagnostics.iter().map(|d| (d.rule.as_str(), d.line)).collect();
    assert_eq!(rules, [("missing-argument", 3), ("unknown-argument", 3)], "{r:#?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_refused_chains_json_lists_its_diagnostics() {
    let runs = Arc::new(AtomicU32::new(0));
    let r = run(TWO_BAD_CALLS, TypeCheck::Enforce, &runs).await;
    let json = serde_json::to_value(&r).expect("json");
    assert_eq!(json["error"]["kind"], "type_error");
    let diagnostics = json["diagnostics"].as_array().expect("diagnostics");
    let keys: Vec<(Value, Value)> = diagnostics
        .iter()
        .map(|d| (d["rule"].clone(), d["line"].clone()))
        .collect();
    assert_eq!(
        keys,
        [
            (json!("invalid-argument-type"), json!(1)),
            (json!("unknown-tool"), json!(2))
        ],
        "{json:#}"
    );
    assert!(
        diagnostics
            .iter()
            .all(|d| d["col"].is_u64() && d["message"].is_string())
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn warn_runs_the_chain_and_lists_what_it_found() {
    let runs = Arc::new(AtomicU32::new(0));
    let r = run(THIRD_CALL_BAD, TypeCheck::Warn, &runs).await;
    assert_eq!(runs.load(Ordering::SeqCst), 2, "the calls before the bad one ran");
    assert!(r.diagnostics.is_empty());
    assert!(
        r.warnings
            .iter()
            .any(|w| w.line == Some(3) && w.message.contains("amout")),
        "{r:#?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn off_runs_the_chain_unchecked() {
    let runs = Arc::new(AtomicU32::new(0));
    let r = run(THIRD_CALL_BAD, TypeCheck::Off, &runs).await;
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    assert!(r.warnings.is_empty(), "{r:#?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_chain_whose_calls_fit_runs_under_enforce() {
    let runs = Arc::new(AtomicU32::new(0));
    let script = "import asyncio\ntargets = ['a', 'b']\nr = await asyncio.gather(*[send(to=t, amount=len(t)) for t in targets])\nr";
    let r = run(script, TypeCheck::Enforce, &runs).await;
    assert_eq!(r.output, json!(["sent", "sent"]), "{r:#?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_mcp_error_text_carries_every_diagnostic() {
    let runs = Arc::new(AtomicU32::new(0));
    let r = run(TWO_BAD_CALLS, TypeCheck::Enforce, &runs).await;
    let text = chainbox::mcp::serve::call_tool_result(&r).content[0]
        .as_text()
        .map(|t| t.text.clone())
        .unwrap_or_default();
    assert!(text.contains("[type_error]"), "{text}");
    assert!(text.contains("line 1:") && text.contains("line 2:"), "{text}");
}

#[test]
fn a_script_the_type_checker_cannot_finish_is_checked_by_its_tree_and_runs() {
    // ty 0.0.14 never finishes reading monty's own test of nested
    // `functools.partial`s: the check stops at its deadline.
    let path = crate::monty_cases::monty_test_cases_dir().join("functools__partial.py");
    let script = std::fs::read_to_string(&path).expect("monty's functools__partial.py");
    let verdict = chainbox::check::Checker::default().check(&script, &ToolRegistry::new(), TypeCheck::Enforce, false);
    assert!(!verdict.refused(), "{verdict:?}");
    assert!(
        verdict
            .warnings
            .iter()
            .any(|w| w.message.starts_with("type check skipped")),
        "{verdict:?}"
    );
}
